"""Verifying the lexical index of a workspace against its records.

Everything the index holds is recomputed from the record table by the rules the write path
follows (``catalog_app.record_sql``'s live and current-in-lane, the analyzers' SQL) and compared:
documents, postings, group statistics, exact term dfs, the validity of the pruning bounds
(``max_tf`` at least, ``min_length`` at most the true ones) and the source totals. Read-only.
"""
from __future__ import annotations

from django.db import connection

from ..record_sql import RECORD, current_in_lane, live, source_bytes
from .analyzers import Analyzer, maintained_analyzers
from .tables import DOCUMENT, GROUP, GROUP_STATS, POSTING, SOURCE_TOTALS, TERM_STATS, group_of


def lexical_check(*, workspace_id: int) -> list[str]:
    """Every difference between the index of workspace ``workspace_id`` and its records, one
    line each (empty when they agree)."""
    differences: list[str] = []
    with connection.cursor() as cursor:
        for analyzer in maintained_analyzers():
            for check in (_documents, _postings, _group_stats, _term_stats):
                cursor.execute(check(analyzer), {"ws": workspace_id, "analyzer": analyzer.code})
                differences += [f"{analyzer.name}: {line}" for (line,) in cursor.fetchall()]
        cursor.execute(_SOURCE_TOTALS, {"ws": workspace_id})
        differences += [line for (line,) in cursor.fetchall()]
    return differences


def _visible(analyzer: Analyzer) -> str:
    return (f"SELECT r.seq, r.id, g.id AS group_id, {analyzer.length_sql} AS length, r.bm25_tf, r.search_vector "
            f"FROM {RECORD} r LEFT JOIN {GROUP} g ON {group_of('r', 'g')} "
            f"WHERE r.workspace_id = %(ws)s AND {live('r')} AND {current_in_lane('r').sql}")


def _documents(analyzer: Analyzer) -> str:
    return (
        f"WITH v AS ({_visible(analyzer)}), "
        f"d AS (SELECT * FROM {DOCUMENT} WHERE workspace_id = %(ws)s AND analyzer = %(analyzer)s) "
        "SELECT CASE WHEN d.seq IS NULL THEN format('record %%s (seq %%s) is visible but not indexed', v.id, v.seq) "
        "WHEN v.seq IS NULL THEN format('record %%s (seq %%s) is indexed but not visible', d.record_id, d.seq) "
        "ELSE format('record %%s (seq %%s) is indexed as group %%s length %%s, its record says group %%s length %%s', "
        "v.id, v.seq, d.group_id, d.length, v.group_id, v.length) END "
        "FROM v FULL JOIN d ON d.seq = v.seq "
        "WHERE v.seq IS NULL OR d.seq IS NULL OR d.record_id <> v.id OR d.group_id IS DISTINCT FROM v.group_id "
        "OR d.length <> v.length ORDER BY coalesce(v.seq, d.seq)")


def _expected_postings(analyzer: Analyzer) -> str:
    return (f"SELECT t.term, r.seq, r.group_id, t.tf, r.length FROM ({_visible(analyzer)}) r "
            f"CROSS JOIN {analyzer.terms_sql}")


def _postings(analyzer: Analyzer) -> str:
    return (
        f"WITH e AS ({_expected_postings(analyzer)}), "
        f"p AS (SELECT * FROM {POSTING} WHERE workspace_id = %(ws)s AND analyzer = %(analyzer)s) "
        "SELECT CASE WHEN p.seq IS NULL THEN format('posting %%L of seq %%s (tf %%s) is missing', e.term, e.seq, e.tf) "
        "WHEN e.seq IS NULL THEN format('posting %%L of seq %%s should not exist', p.term, p.seq) "
        "ELSE format('posting %%L of seq %%s holds group %%s tf %%s length %%s, expected group %%s tf %%s length %%s', "
        "e.term, e.seq, p.group_id, p.tf, p.length, e.group_id, e.tf, e.length) END "
        "FROM e FULL JOIN p ON p.term = e.term AND p.seq = e.seq "
        "WHERE e.seq IS NULL OR p.seq IS NULL OR p.group_id IS DISTINCT FROM e.group_id OR p.tf <> e.tf "
        "OR p.length <> e.length ORDER BY coalesce(e.term, p.term), coalesce(e.seq, p.seq)")


def _group_stats(analyzer: Analyzer) -> str:
    return (
        f"WITH e AS (SELECT group_id, count(*) AS docs, sum(length) AS total FROM ({_visible(analyzer)}) v "
        "GROUP BY group_id), "
        f"s AS (SELECT s.* FROM {GROUP_STATS} s JOIN {GROUP} g ON g.id = s.group_id "
        "WHERE g.workspace_id = %(ws)s AND s.analyzer = %(analyzer)s) "
        "SELECT format('group %%s counts %%s documents of total length %%s, expected %%s and %%s', "
        "coalesce(s.group_id, e.group_id), coalesce(s.docs, 0), coalesce(s.total_length, 0), coalesce(e.docs, 0), "
        "coalesce(e.total, 0)) FROM e FULL JOIN s ON s.group_id = e.group_id "
        "WHERE coalesce(s.docs, 0) <> coalesce(e.docs, 0) OR coalesce(s.total_length, 0) <> coalesce(e.total, 0) "
        "ORDER BY coalesce(s.group_id, e.group_id)")


def _term_stats(analyzer: Analyzer) -> str:
    return (
        "WITH e AS (SELECT x.term, g.collection, g.status, count(*) AS df, max(x.tf) AS max_tf, "
        f"min(x.length) AS min_length FROM ({_expected_postings(analyzer)}) x JOIN {GROUP} g ON g.id = x.group_id "
        "GROUP BY 1, 2, 3), "
        f"s AS (SELECT * FROM {TERM_STATS} WHERE workspace_id = %(ws)s AND analyzer = %(analyzer)s) "
        "SELECT format('term %%L in %%s/%%s: df %%s, max tf %%s, min length %%s; expected df %%s, max tf >= %%s, "
        "min length <= %%s', coalesce(s.term, e.term), coalesce(s.collection, e.collection), "
        "coalesce(s.status, e.status), coalesce(s.df, 0), s.max_tf, s.min_length, coalesce(e.df, 0), e.max_tf, "
        "e.min_length) FROM e FULL JOIN s ON s.term = e.term AND s.collection = e.collection AND s.status = e.status "
        "WHERE coalesce(s.df, 0) <> coalesce(e.df, 0) OR s.max_tf < e.max_tf OR s.min_length > e.min_length "
        "ORDER BY coalesce(s.term, e.term), coalesce(s.collection, e.collection), coalesce(s.status, e.status)")


_SOURCE_TOTALS = (
    f"WITH e AS (SELECT collection, count(*) AS rows, sum({source_bytes('r')}) AS bytes FROM {RECORD} r "
    "WHERE r.workspace_id = %(ws)s GROUP BY collection), "
    f"s AS (SELECT * FROM {SOURCE_TOTALS} WHERE workspace_id = %(ws)s) "
    "SELECT format('source totals of collection %%L: %%s rows, %%s bytes; expected %%s rows, %%s bytes', "
    "coalesce(s.collection, e.collection), coalesce(s.rows, 0), coalesce(s.bytes, 0), coalesce(e.rows, 0), "
    "coalesce(e.bytes, 0)) FROM e FULL JOIN s ON s.collection = e.collection "
    "WHERE coalesce(s.rows, 0) <> coalesce(e.rows, 0) OR coalesce(s.bytes, 0) <> coalesce(e.bytes, 0) "
    "ORDER BY coalesce(s.collection, e.collection)")
