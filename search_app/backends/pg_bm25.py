"""Exact BM25 in the ``pg`` backend as SQL over the record table: the score of the canonical
reload (``bm25_v1``, over each record's stored term frequencies, ``catalog_app.bm25_terms``) and
the exact scan of the lexical channels, computing exactly ``search_app.engine.bm25``'s formula.

The scan is what the index (``pg_index``) answers for the scopes it holds, and the channels'
path for every other scope: statistics from the search's own scope and typed filters, counted
in the candidate statement, which reads each record's terms once. Analyzers: ``bm25_v1`` and
``en_v1`` (the stored term frequencies of each) and ``english`` (the lexemes of the stored ``tsvector``, tf = their
positions, as ``catalog_app.lexical.analyzers`` defines them for the index).
"""
from __future__ import annotations

from django.db import connection

from catalog_app.bm25_formula import contribution_sql, idf_sql
from catalog_app.bm25_terms import bm25_query_terms
from catalog_app.lexical.analyzers import ENGLISH as ENGLISH_ANALYZER
from catalog_app.record_sql import RECORD

from ..engine.bm25 import Bm25Stats, bm25_stats
from ..engine.resolve import ResolvedSource
from .pg_scope import filter_clause, scope_clause

BM25_V1, ENGLISH, EN_V1 = "bm25_v1", "english", "en_v1"
# The stored (term frequencies, length) columns of the analyzers written at ingest.
_STORED = {BM25_V1: ("r.bm25_tf", "r.bm25_length"), EN_V1: ("r.en_tf", "coalesce(r.en_length, 0)")}


def terms_join(terms: tuple[str, ...], analyzer: str = BM25_V1, alias: str = "b") -> tuple[str, list]:
    """A LATERAL join (after the record table as ``r``) giving ``b.length`` and ``b.t0`` (``b``: ``alias``),
    ``b.t1``, ... (each query term's frequency in the record, NULL when absent) under
    ``analyzer`` (``bm25_v1`` or ``en_v1``; ``english_join`` for ``english``). The stored (usually
    TOASTed) jsonb is decompressed once per row, not once per term and use."""
    tf, length = _STORED[analyzer]
    columns = "".join(f", (j.tf ->> %s)::float8 AS t{i}" for i in range(len(terms)))
    return (f"CROSS JOIN LATERAL (SELECT j.length{columns} FROM (SELECT {tf} || '{{}}'::jsonb AS tf, "
            f"{length} AS length OFFSET 0) j) {alias}"), list(terms)


def english_join(terms: tuple[str, ...]) -> tuple[str, list]:
    """``terms_join`` for the ``english`` analyzer: ``b.length`` and ``b.t0``, ... from the
    record's stored ``tsvector``."""
    columns = "".join(f", (SELECT t.tf FROM {ENGLISH_ANALYZER.terms_sql} WHERE t.term = %s)::float8 AS t{i}"
                      for i in range(len(terms)))
    return (f"CROSS JOIN LATERAL (SELECT {ENGLISH_ANALYZER.length_sql} AS length{columns} OFFSET 0) b",
            list(terms))


def _term_sql(i: int, term_idf: str, average_sql: str, alias: str = "b") -> str:
    """Term ``i``'s contribution over the columns of ``terms_join`` (or a relation copying them)."""
    return contribution_sql(term_idf, f"COALESCE({alias}.t{i}, 0)", f"{alias}.length", average_sql)


def score_expression(stats: Bm25Stats, alias: str = "b") -> tuple[str, list]:
    """SQL for the record's BM25 score under ``stats`` (0 when it shares no term), reading the
    columns of ``terms_join(stats.terms, analyzer, alias)``, which the query must include."""
    if not stats.usable:
        return "0::float8", []
    parts, params = [], []
    for i, term_idf in enumerate(stats.idf):
        parts.append(_term_sql(i, "%s", "%s", alias))
        params.extend([term_idf, stats.average_length])
    return "(" + " + ".join(parts) + ")", params


def bm25_candidates(resolved: ResolvedSource, workspace_id: int, q: str, cap: int) -> tuple[Bm25Stats, list]:
    """The BM25 channel by exact scan (``bm25_v1`` terms of ``q``): what the index answers for
    the scopes it holds (the lexical benchmark's full-scan baseline)."""
    return scan_candidates(resolved, workspace_id, BM25_V1, tuple(bm25_query_terms(q or "")), cap)


def scan_candidates(resolved: ResolvedSource, workspace_id: int, analyzer: str, terms: tuple[str, ...],
                    cap: int) -> tuple[Bm25Stats, list]:
    """The statistics of the distinct ``terms`` (of ``analyzer``) over the source's scope and
    typed filters, and the ``cap`` best records by exact BM25 among those sharing a term (ties
    by ascending id), from one statement (one pass over the scope)."""
    if not terms:
        return Bm25Stats((), 0, 0.0, ()), []
    scope_sql, scope_params = scope_clause(resolved, workspace_id)
    filter_sql, filter_params = filter_clause(resolved)
    join, join_params = english_join(terms) if analyzer == ENGLISH else terms_join(terms, analyzer)
    tcols = "".join(f", b.t{i}" for i in range(len(terms)))
    dfs = "".join(f", count(d.t{i})::float8 AS df{i}" for i in range(len(terms)))
    # idf computed in float8 exactly as ``idf`` does in Python (the reload scores with those).
    score = " + ".join(_term_sql(i, idf_sql("s.n", f"s.df{i}"), "s.average", "d")
                       for i in range(len(terms)))
    shares_a_term = " OR ".join(f"d.t{i} IS NOT NULL" for i in range(len(terms)))
    sql = (f"WITH d AS MATERIALIZED (SELECT r.id, b.length{tcols} FROM {RECORD} r {join} "
           f"WHERE {scope_sql} AND {filter_sql}), "
           f"s AS (SELECT count(*)::float8 AS n, coalesce(avg(d.length), 0)::float8 AS average{dfs} FROM d) "
           f"SELECT c.id, s.* FROM s LEFT JOIN LATERAL (SELECT d.id, {score} AS score FROM d "
           f"WHERE ({shares_a_term}) AND s.average > 0 ORDER BY score DESC, d.id ASC LIMIT %s) c ON true "
           f"ORDER BY c.score DESC, c.id ASC")
    with connection.cursor() as cursor:
        cursor.execute(sql, [*join_params, *scope_params, *filter_params, cap])
        rows = cursor.fetchall()
    # One row per candidate (the statistics repeated), or one row with a NULL id when none.
    stats = bm25_stats(terms, rows[0][1], rows[0][2], rows[0][3:])
    return stats, [row[0] for row in rows if row[0] is not None]
