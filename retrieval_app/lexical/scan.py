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

Two statements: the first counts coverage and statistics, the second scores the corpus rows of
the same window (the source rows after the cursor up to the last admitted one) with the idf of
those statistics. They must see one snapshot: the service runs them in one REPEATABLE READ
transaction, and a second statement that finds fewer hits than the first counted matches is a
detected inconsistency (500), never a silently shorter page.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.db import connection

from catalog_app.record_sql import RECORD, source_bytes
from memseek_site.errors import ApiError
from search_app.backends.pg_bm25 import score_expression, terms_join
from search_app.engine.bm25 import bm25_stats

from .corpus import LexicalCorpus
from .request import LexicalRequest, LexicalRequestError


class LexicalInconsistency(ApiError):
    """Stored rows disagree with what the same retrieval already counted."""


@dataclass(frozen=True, slots=True)
class LexicalPage:
    hits: tuple[tuple[uuid.UUID, float], ...]  # best first, ties by ascending UUID
    matched: int
    corpus: int
    scanned: int
    scanned_bytes: int
    exhaustive: bool
    next_after: uuid.UUID | None


def _source(corpus: LexicalCorpus, after: uuid.UUID | None) -> tuple[str, list]:
    sql = "r.workspace_id = %s AND r.collection = ANY(%s)"
    params: list = [corpus.workspace_id, list(corpus.collections)]
    if after is not None:
        sql += " AND r.id > %s"
        params.append(after)
    return sql, params


def lexical_scan(corpus: LexicalCorpus, request: LexicalRequest) -> LexicalPage:
    """The page a full scan under ``request``'s budgets and cursor reports. Raises
    ``LexicalRequestError('lexical_scan_budget')`` when the byte budget cannot admit the first
    source row, ``LexicalInconsistency`` when the scoring pass disagrees with the count."""
    terms = request.terms
    source_sql, source_params = _source(corpus, request.after)
    join, join_params = terms_join(terms)
    tcols = "".join(f", b.t{i}" for i in range(len(terms)))
    dfs = "".join(f", count(d.t{i})" for i in range(len(terms)))
    shares = " OR ".join(f"d.t{i} IS NOT NULL" for i in range(len(terms)))
    sql = (f"WITH src AS MATERIALIZED (SELECT r.id, {source_bytes('r')}::bigint AS bytes FROM {RECORD} r "
           f"WHERE {source_sql} ORDER BY r.id LIMIT %s), "
           "w AS MATERIALIZED (SELECT id, bytes, row_number() OVER (ORDER BY id) <= %s AND "
           "sum(bytes) OVER (ORDER BY id ROWS UNBOUNDED PRECEDING) <= %s AS admitted FROM src), "
           f"d AS MATERIALIZED (SELECT r.id, b.length{tcols} FROM w JOIN {RECORD} r ON r.id = w.id {join} "
           f"WHERE w.admitted AND {corpus.corpus.sql}) "
           "SELECT (SELECT count(*) FROM w), (SELECT count(*) FROM w WHERE admitted), "
           "(SELECT coalesce(sum(bytes), 0) FROM w WHERE admitted), "
           "(SELECT id FROM w WHERE admitted ORDER BY id DESC LIMIT 1), (SELECT bytes FROM w ORDER BY id LIMIT 1), "
           f"count(*), coalesce(avg(d.length), 0)::float8, count(*) FILTER (WHERE {shares}){dfs} FROM d")
    params = [*source_params, request.scan_limit + 1, request.scan_limit, request.scan_bytes_limit, *join_params,
              *corpus.corpus.params]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        fetched, scanned, scanned_bytes, last, first_bytes, n, average, matched, *df = cursor.fetchone()
    if fetched and not scanned:
        where = "after query.after " if request.after else ""
        raise LexicalRequestError("lexical_scan_budget", f"the first source row {where}is {first_bytes} bytes, "
                                  f"more than the budget of {request.scan_bytes_limit}; raise scan_bytes_limit",
                                  "query.scan_bytes_limit")
    remains = fetched > scanned
    hits = _hits(corpus, request, last, bm25_stats(terms, n, average, df)) if matched else ()
    if len(hits) != min(request.limit, matched):
        raise LexicalInconsistency("retrieval_inconsistency", f"the scan counted {matched} matching records but "
                                   f"scoring found {len(hits)} of the first {request.limit}; retry the request")
    return LexicalPage(hits=hits, matched=matched, corpus=n, scanned=scanned, scanned_bytes=int(scanned_bytes),
                       exhaustive=request.after is None and not remains, next_after=last if remains else None)


def _hits(corpus: LexicalCorpus, request: LexicalRequest, last: uuid.UUID, stats) -> tuple:
    source_sql, source_params = _source(corpus, request.after)
    score, score_params = score_expression(stats)
    join, join_params = terms_join(stats.terms)
    shares = " OR ".join(f"b.t{i} IS NOT NULL" for i in range(len(stats.terms)))
    sql = (f"SELECT r.id, {score} AS score FROM {RECORD} r {join} WHERE {source_sql} AND r.id <= %s "
           f"AND {corpus.corpus.sql} AND ({shares}) ORDER BY score DESC, r.id ASC LIMIT %s")
    with connection.cursor() as cursor:
        cursor.execute(sql, [*score_params, *join_params, *source_params, last, *corpus.corpus.params,
                             request.limit])
        return tuple((row[0], float(row[1])) for row in cursor.fetchall())
