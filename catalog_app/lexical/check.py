"""Verifying the lexical index of a workspace against its records.

Everything the index holds is recomputed from the record table by the rules the write path
follows (``catalog_app.record_sql``'s live and current-in-lane, the analyzers' SQL) and compared:
documents, postings, group statistics, exact term dfs, the validity of the pruning bounds
(``max_tf`` at least, ``min_length`` at most the true ones) and the source totals. The compacted
blocks are held against the posting rows they copy (``compaction``'s invariant: exactly the rows
with seq <= the watermark, except the logged seqs). Read-only.
"""
from __future__ import annotations

import numpy as np
from django.db import connection

from ..record_sql import RECORD, current_in_lane, live, source_bytes
from .analyzers import Analyzer, maintained_analyzers
from .binary_rows import binary_rows
from .blocks import ROW, block_bytes, decode, packed_rows
from .tables import (
    BLOCK, CHANGE, COMPACTION, DOCUMENT, GROUP, GROUP_STATS, POSTING, SOURCE_TOTALS, TERM_STATS, group_of,
)


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
    for analyzer in maintained_analyzers():
        differences += [f"{analyzer.name}: {line}"
                        for row in binary_rows(_BLOCKS, {"ws": workspace_id, "analyzer": analyzer.code})
                        for line in _block_differences(*row)]
    return differences


_BLOCKS = (
    f"WITH w AS (SELECT coalesce(max(watermark), 0) AS watermark FROM {COMPACTION} "
    "WHERE workspace_id = %(ws)s AND analyzer = %(analyzer)s), "
    f"lg AS (SELECT coalesce(array_agg(DISTINCT seq), '{{}}') AS seqs FROM {CHANGE} "
    "WHERE workspace_id = %(ws)s AND analyzer = %(analyzer)s), "
    f"r AS (SELECT p.term, p.group_id, {packed_rows('p')} AS blob FROM {POSTING} p WHERE p.workspace_id = %(ws)s "
    "AND p.analyzer = %(analyzer)s AND p.seq <= (SELECT watermark FROM w) "
    "AND NOT p.seq = ANY((SELECT seqs FROM lg)::bigint[]) GROUP BY 1, 2), "
    "b AS (SELECT term, group_id, array_agg(first_seq ORDER BY first_seq) AS firsts, "
    "array_agg(last_seq ORDER BY first_seq) AS lasts, array_agg(postings ORDER BY first_seq) AS counts, "
    "array_agg(width ORDER BY first_seq) AS widths, array_agg(data ORDER BY first_seq) AS datas "
    f"FROM {BLOCK} WHERE workspace_id = %(ws)s AND analyzer = %(analyzer)s GROUP BY 1, 2) "
    "SELECT coalesce(r.term, b.term), coalesce(r.group_id, b.group_id), r.blob, b.firsts, b.lasts, b.counts, "
    "b.widths, b.datas, lg.seqs, (SELECT watermark FROM w) FROM r FULL JOIN b ON b.term = r.term "
    "AND b.group_id = r.group_id CROSS JOIN lg ORDER BY 1, 2")


def _block_differences(term, group_id, blob, firsts, lasts, counts, widths, datas, logged, watermark) -> list[str]:
    """How one (term, group)'s blocks differ from its posting rows at or below the watermark and
    not logged."""
    where = f"blocks of term {term!r} in group {group_id}"
    lines, parts = [], []
    for first, last, count, width, data in zip(firsts or (), lasts or (), counts or (), widths or (), datas or ()):
        part = decode(first, count, width, data) if len(data) == block_bytes(count, width) else None
        if part is None or part[0][0] != first or part[0][-1] != last or np.any(np.diff(part[0]) <= 0) \
                or (parts and parts[-1][0][-1] >= first) or last > watermark:
            lines.append(f"{where}: block at seq {first} is malformed (last {last}, {count} postings, width {width})")
        if part is not None:
            parts.append(part)
    held = {}
    for seqs, tfs, lengths in parts:
        held.update(zip(seqs.tolist(), zip(tfs.tolist(), lengths.tolist())))
    for seq in logged or ():
        held.pop(seq, None)
    rows = np.frombuffer(blob or b"", ROW)
    expected = dict(zip(rows["seq"].tolist(), zip(rows["tf"].tolist(), rows["length"].tolist())))
    for seq in sorted(expected.keys() | held.keys()):
        if seq not in held:
            lines.append(f"{where}: seq {seq} (tf {expected[seq][0]}) is missing")
        elif seq not in expected:
            lines.append(f"{where}: seq {seq} should not be in a block")
        elif held[seq] != expected[seq]:
            lines.append(f"{where}: seq {seq} holds tf {held[seq][0]} length {held[seq][1]}, "
                         f"expected tf {expected[seq][0]} length {expected[seq][1]}")
    return lines


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
