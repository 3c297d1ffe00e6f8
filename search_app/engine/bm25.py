"""Exact BM25 (``bm25_v1`` of lexical-search.md) as a rank signal and a candidate channel.

Statistics come from the search's own scope and typed filters, counted in one pass: N (the
records in scope), df of each query term and the average length. Scores use the fixed
formula with k1 = 1.2 and b = 0.75:

    idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    score  = sum(idf(t) * tf(t) * 2.2 / (tf(t) + 1.2 * (0.25 + 0.75 * length / average_length)))

Term frequencies and lengths are stored per record at write time (``catalog_app.bm25_terms``),
so SQL computes the same score for candidates and for the canonical reload.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from django.db import connection

from catalog_app.bm25_terms import bm25_query_terms

from .resolve import ResolvedSource
from .sql_scope import RECORD, filter_clause, scope_clause

K1 = 1.2
B = 0.75
# The record's term frequencies, detoasted once per row: every ``?`` and ``->>`` on the stored
# (usually TOASTed) jsonb would otherwise decompress it again, twice per query term. Join it
# after ``FROM catalog_app_record r`` and read ``b.bm25_tf`` / ``b.bm25_length``.
TERMS = "b"
TERMS_JOIN = f"CROSS JOIN LATERAL (SELECT r.bm25_tf || '{{}}'::jsonb AS bm25_tf, r.bm25_length OFFSET 0) AS {TERMS}"


def idf(n: int, df: int) -> float:
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def bm25_term_score(tf: float, length: float, average_length: float, term_idf: float) -> float:
    """One term's contribution; the pure form of the SQL expression below."""
    return term_idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average_length))


@dataclass(frozen=True, slots=True)
class Bm25Stats:
    terms: tuple[str, ...]
    n: int
    average_length: float
    idf: tuple[float, ...]

    @property
    def usable(self) -> bool:
        return bool(self.terms) and self.n > 0 and self.average_length > 0


def bm25_stats(resolved: ResolvedSource, workspace_id: int, q: str) -> Bm25Stats:
    """N, df and average length over the source's scope and filters, in one scan."""
    terms = tuple(bm25_query_terms(q or ""))
    scope_sql, scope_params = scope_clause(resolved, workspace_id)
    filter_sql, filter_params = filter_clause(resolved)
    dfs = ", ".join(f"count(*) FILTER (WHERE {TERMS}.bm25_tf ? %s)" for _ in terms)
    sql = (f"SELECT count(*), coalesce(avg(r.bm25_length), 0){', ' + dfs if terms else ''} "
           f"FROM {RECORD} r {TERMS_JOIN if terms else ''} WHERE {scope_sql} AND {filter_sql}")
    with connection.cursor() as cursor:
        cursor.execute(sql, [*terms, *scope_params, *filter_params])
        row = cursor.fetchone()
    n, average = int(row[0]), float(row[1])
    return Bm25Stats(terms, n, average, tuple(idf(n, int(df)) for df in row[2:]))


def score_expression(stats: Bm25Stats, alias: str = TERMS) -> tuple[str, list]:
    """SQL for the record's BM25 score under ``stats`` (0 when it shares no term), reading the
    columns of ``alias`` (by default the ``TERMS_JOIN`` the query must then include)."""
    if not stats.usable:
        return "0::float8", []
    parts, params = [], []
    for term, term_idf in zip(stats.terms, stats.idf):
        tf = f"COALESCE(({alias}.bm25_tf ->> %s)::float8, 0)"
        parts.append(f"(%s * {tf} * {K1 + 1} / ({tf} + {K1} * ({1 - B} + {B} * {alias}.bm25_length / %s)))")
        params.extend([term_idf, term, term, stats.average_length])
    return "(" + " + ".join(parts) + ")", params


def bm25_candidates(resolved: ResolvedSource, workspace_id: int, stats: Bm25Stats, cap: int) -> list:
    """The ``cap`` best records by exact BM25 among those sharing a query term."""
    if not stats.usable:
        return []
    scope_sql, scope_params = scope_clause(resolved, workspace_id)
    filter_sql, filter_params = filter_clause(resolved)
    score, score_params = score_expression(stats)
    sql = (f"SELECT r.id FROM {RECORD} r {TERMS_JOIN} WHERE r.bm25_tf ?| %s AND {scope_sql} AND {filter_sql} "
           f"ORDER BY {score} DESC, r.id ASC LIMIT %s")
    with connection.cursor() as cursor:
        cursor.execute(sql, [list(stats.terms), *scope_params, *filter_params, *score_params, cap])
        return [row[0] for row in cursor.fetchall()]
