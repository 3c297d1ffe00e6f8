"""The analyzers of the lexical index: how a record becomes (term, tf) rows and a length.

Each analyzer is SQL over a record row ``r``, so the index is built inside the database from
what the record already stores, and one definition serves writes, backfill and the check:

* ``bm25_v1``: the terms of ``catalog_app.bm25_terms`` exactly, read from ``r.bm25_tf`` (written
  at ingest by that module); length ``r.bm25_length`` (every token).
* ``en_v1``: the stemmed English terms of ``catalog_app.en_terms`` (bm25s's English analysis:
  ``\\w\\w+`` tokens, its stopwords, Snowball's English stemmer), read from ``r.en_tf`` (written at
  ingest by that module); length ``r.en_length``. A record written before the analyzer existed
  has NULL there; ``prepare`` analyses such records before the index adds them.
* ``english``: the lexemes of the stored English ``tsvector`` (``r.search_vector``); tf is the
  number of positions the vector keeps for the lexeme, length their sum.
"""
from __future__ import annotations

import json

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memseek_site.conf import memseek_setting

from ..bm25_terms import bm25_query_terms, term_frequencies
from ..en_terms import en_query_terms, en_term_frequencies
from ..record_sql import RECORD


@dataclass(frozen=True, slots=True)
class Analyzer:
    name: str
    code: int  # the ``analyzer`` column of every lexical table
    terms_sql: str  # a FROM item (LATERAL after ``r``) yielding ``t.term`` (text) and ``t.tf`` (integer)
    length_sql: str  # the record's length under this analyzer
    # Fills the stored columns its SQL reads for the records ``seqs`` that lack them (cursor, seqs).
    prepare: Callable[[object, Sequence[int]], None] | None = None
    # The analysis in Python, for analyzers stored at write time: a query's distinct terms, and
    # a text's ({term: tf}, length). None for ``english`` (PostgreSQL analyses it).
    query_terms: Callable[[str], list[str]] | None = None
    frequencies: Callable[[str], tuple[dict[str, int], int]] | None = None

    @property
    def postings_sql(self) -> str:
        """FROM items after a row ``r`` that has ``seq``, ``group_id``, ``length`` and the
        record's stored columns: ``t.term`` and the posting ``x`` (``seq``, ``group_id``, ``tf``,
        ``length``) of each of its terms, as ``blocks.packed_rows('x')`` packs them."""
        return f"CROSS JOIN {self.terms_sql} CROSS JOIN LATERAL (SELECT r.seq, r.group_id, t.tf, r.length) x"


BM25_V1 = Analyzer("bm25_v1", 1, "LATERAL (SELECT e.key AS term, e.value::integer AS tf "
                                 "FROM jsonb_each_text(r.bm25_tf) e) t", "r.bm25_length",
                   query_terms=bm25_query_terms, frequencies=term_frequencies)
ENGLISH = Analyzer("english", 2, "LATERAL (SELECT u.lexeme AS term, greatest(cardinality(u.positions), 1) AS tf "
                                 "FROM unnest(r.search_vector) u) t",
                   "(SELECT coalesce(sum(greatest(cardinality(u.positions), 1)), 0)::integer "
                   "FROM unnest(r.search_vector) u)")


def _en_prepare(cursor, seqs: Sequence[int]) -> None:
    """Analyse the records among ``seqs`` written before ``en_v1`` existed (NULL ``en_tf``)."""
    cursor.execute(f"SELECT seq, text FROM {RECORD} WHERE seq = ANY(%s) AND en_tf IS NULL ORDER BY seq",
                   [list(seqs)])
    rows = [(seq, *en_term_frequencies(text or "")) for seq, text in cursor.fetchall()]
    if rows:
        cursor.execute(f"UPDATE {RECORD} r SET en_tf = u.tf, en_length = u.length FROM "
                       "jsonb_to_recordset(%s::jsonb) AS u(seq bigint, tf jsonb, length integer) WHERE r.seq = u.seq",
                       [json.dumps([{"seq": seq, "tf": tf, "length": length} for seq, tf, length in rows])])


EN_V1 = Analyzer("en_v1", 3, "LATERAL (SELECT e.key AS term, e.value::integer AS tf "
                             "FROM jsonb_each_text(r.en_tf) e) t", "coalesce(r.en_length, 0)", _en_prepare,
                 en_query_terms, en_term_frequencies)
ANALYZERS = {analyzer.name: analyzer for analyzer in (BM25_V1, ENGLISH, EN_V1)}
# The record columns the analyzers' SQL reads, for statements that select them for ``r``.
STORED_COLUMNS = ("bm25_tf", "search_vector", "en_tf", "en_length")


def stored_columns(alias: str) -> str:
    """``alias.bm25_tf, alias.search_vector, ...``: every column an analyzer's SQL reads."""
    return ", ".join(f"{alias}.{column}" for column in STORED_COLUMNS)


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
