"""The exact lexical scan of lexical-search.md: the source rows of the scope in ascending UUID
order after the exclusive cursor, admitted while both budgets hold, BM25 over the corpus rows
among them.

Admission: rows are taken in UUID order while at most ``scan_limit`` rows and at most
``scan_bytes_limit`` bytes (each row's ``catalog_app.record_sql.source_bytes``) are admitted;
one more row is read to know whether another remains (the lookahead, not counted). Every
admitted row counts in ``scanned_records`` / ``scanned_bytes`` whatever it is (tombstone, not
current, not ready, draft, filtered out); N, df, the average length and ``matched_records`` are
counted over the corpus rows among the admitted ones, and the hits are the best of those by
exact BM25 (``search_app.engine.bm25``), ties by ascending UUID.

One statement, so every figure and every score come from one snapshot and one read of each
row. The window's ids are chosen first (UUID order, cursor, the row budget plus the lookahead);
only those rows are then read, each by its primary key, for its bytes, its visibility under the
corpus rule and its stored term frequencies. The score is ``search_app.engine.bm25``'s formula
with idf computed in float8 from the counted statistics, as the ``pg`` backend computes it.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.db import connection

from catalog_app.bm25_formula import contribution_sql, idf_sql
from catalog_app.record_sql import RECORD, source_bytes
from search_app.backends.pg_bm25 import terms_join

from .corpus import LexicalCorpus
from .request import LexicalRequest, LexicalRequestError


@dataclass(frozen=True, slots=True)
class LexicalPage:
    hits: tuple[tuple[uuid.UUID, float], ...]  # best first, ties by ascending UUID
    matched: int
    corpus: int  # N
    scanned: int
    scanned_bytes: int
    exhaustive: bool
    next_after: uuid.UUID | None
    average_length: float  # over the corpus
    dfs: tuple[int, ...]  # per query term, over the corpus


def lexical_scan(corpus: LexicalCorpus, request: LexicalRequest) -> LexicalPage:
    """The page a full scan under ``request``'s budgets and cursor reports. Raises
    ``LexicalRequestError('lexical_scan_budget')`` when the byte budget cannot admit the first
    source row."""
    terms = request.terms
    source_sql = "r.workspace_id = %s AND r.collection = ANY(%s)"
    source_params: list = [corpus.workspace_id, list(corpus.collections)]
    if request.after is not None:
        source_sql += " AND r.id > %s"
        source_params.append(request.after)
    join, join_params = terms_join(terms, request.analyzer)
    tcols = "".join(f", b.t{i}" for i in range(len(terms)))
    dfs = "".join(f", count(d.t{i})::float8 AS df{i}" for i in range(len(terms)))
    shares = " OR ".join(f"d.t{i} IS NOT NULL" for i in range(len(terms)))
    score = " + ".join(_term_sql(i) for i in range(len(terms)))
    # The corpus rule is a column, not a condition, so the only condition on each row's read is
    # its primary key (whatever the planner guesses of a table it has no statistics for yet).
    sql = (f"WITH src AS MATERIALIZED (SELECT r.id FROM {RECORD} r WHERE {source_sql} ORDER BY r.id LIMIT %s), "
           f"rows AS MATERIALIZED (SELECT src.id, x.* FROM src CROSS JOIN LATERAL (SELECT "
           f"{source_bytes('r')}::bigint AS bytes, ({corpus.corpus.sql}) AS visible, b.length{tcols} "
           f"FROM {RECORD} r {join} WHERE r.id = src.id) x), "
           "w AS MATERIALIZED (SELECT rows.*, row_number() OVER (ORDER BY id) <= %s AND "
           "sum(bytes) OVER (ORDER BY id ROWS UNBOUNDED PRECEDING) <= %s AS admitted FROM rows), "
           "d AS MATERIALIZED (SELECT * FROM w WHERE admitted AND visible), "
           "s AS (SELECT (SELECT count(*) FROM w) AS fetched, (SELECT count(*) FROM w WHERE admitted) AS scanned, "
           "(SELECT coalesce(sum(bytes), 0) FROM w WHERE admitted) AS scanned_bytes, "
           "(SELECT id FROM w WHERE admitted ORDER BY id DESC LIMIT 1) AS last, "
           "(SELECT bytes FROM w ORDER BY id LIMIT 1) AS first_bytes, count(*)::float8 AS n, "
           f"coalesce(avg(d.length), 0)::float8 AS average, count(*) FILTER (WHERE {shares}) AS matched{dfs} FROM d) "
           f"SELECT s.fetched, s.scanned, s.scanned_bytes, s.last, s.first_bytes, s.n, s.matched, s.average, "
           f"ARRAY[{', '.join(f's.df{i}' for i in range(len(terms)))}], c.id, c.score "
           f"FROM s LEFT JOIN LATERAL (SELECT d.id, {score} AS score FROM d WHERE ({shares}) "
           "ORDER BY score DESC, d.id ASC LIMIT %s) c ON true ORDER BY c.score DESC, c.id ASC")
    params = [*source_params, request.scan_limit + 1, *corpus.corpus.params, *join_params, request.scan_limit,
              request.scan_bytes_limit, request.limit]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    # One row per hit (the figures repeated), or one row with a NULL id when there is none.
    fetched, scanned, scanned_bytes, last, first_bytes, n, matched, average, dfs = rows[0][:9]
    if fetched and not scanned:
        where = "after query.after " if request.after else ""
        raise LexicalRequestError("lexical_scan_budget", f"the first source row {where}is {first_bytes} bytes, "
                                  f"more than the budget of {request.scan_bytes_limit}; raise scan_bytes_limit",
                                  "query.scan_bytes_limit")
    remains = fetched > scanned
    return LexicalPage(hits=tuple((row[9], float(row[10])) for row in rows if row[9] is not None), matched=matched,
                       corpus=int(n), scanned=scanned, scanned_bytes=int(scanned_bytes),
                       exhaustive=request.after is None and not remains, next_after=last if remains else None,
                       average_length=float(average), dfs=tuple(int(df) for df in dfs))


def _term_sql(i: int) -> str:
    """Term ``i``'s contribution on corpus row ``d`` under the statistics ``s``, with
    ``idf(s.n, s.df_i)``."""
    return contribution_sql(idf_sql("s.n", f"s.df{i}"), f"COALESCE(d.t{i}, 0)", "d.length", "s.average")
