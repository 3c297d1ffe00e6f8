"""The analyzers of the lexical index: how a record becomes (term, tf) rows and a length.

Each analyzer is SQL over a record row ``r``, so the index is built inside the database from
what the record already stores, and one definition serves writes, backfill and the check:

* ``bm25_v1``: the terms of ``catalog_app.bm25_terms`` exactly, read from ``r.bm25_tf`` (written
  at ingest by that module); length ``r.bm25_length`` (every token).
* ``english``: the lexemes of the stored English ``tsvector`` (``r.search_vector``); tf is the
  number of positions the vector keeps for the lexeme, length their sum.
"""
from __future__ import annotations

from dataclasses import dataclass

from memseek_site.conf import memseek_setting


@dataclass(frozen=True, slots=True)
class Analyzer:
    name: str
    code: int  # the ``analyzer`` column of every lexical table
    terms_sql: str  # a FROM item (LATERAL after ``r``) yielding ``t.term`` (text) and ``t.tf`` (integer)
    length_sql: str  # the record's length under this analyzer

    @property
    def postings_sql(self) -> str:
        """FROM items after a row ``r`` that has ``seq``, ``group_id``, ``length`` and the
        record's stored columns: ``t.term`` and the posting ``x`` (``seq``, ``group_id``, ``tf``,
        ``length``) of each of its terms, as ``blocks.packed_rows('x')`` packs them."""
        return f"CROSS JOIN {self.terms_sql} CROSS JOIN LATERAL (SELECT r.seq, r.group_id, t.tf, r.length) x"


BM25_V1 = Analyzer("bm25_v1", 1, "LATERAL (SELECT e.key AS term, e.value::integer AS tf "
                                 "FROM jsonb_each_text(r.bm25_tf) e) t", "r.bm25_length")
ENGLISH = Analyzer("english", 2, "LATERAL (SELECT u.lexeme AS term, greatest(cardinality(u.positions), 1) AS tf "
                                 "FROM unnest(r.search_vector) u) t",
                   "(SELECT coalesce(sum(greatest(cardinality(u.positions), 1)), 0)::integer "
                   "FROM unnest(r.search_vector) u)")
ANALYZERS = {analyzer.name: analyzer for analyzer in (BM25_V1, ENGLISH)}


def analyzer_get(name: str) -> Analyzer:
    """The analyzer called ``name``; raises ``ValueError`` for an unknown one."""
    try:
        return ANALYZERS[name]
    except KeyError:
        raise ValueError(f"unknown analyzer {name!r}; one of {', '.join(ANALYZERS)}") from None


def maintained_analyzers() -> tuple[Analyzer, ...]:
    """The analyzers the write path keeps up to date (setting ``LEXICAL_ANALYZERS``)."""
    names = [name.strip() for name in str(memseek_setting("LEXICAL_ANALYZERS")).split(",") if name.strip()]
    return tuple(analyzer_get(name) for name in dict.fromkeys(names))
