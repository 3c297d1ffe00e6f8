"""Verifying the lexical index of a workspace against its records.

Everything the index holds is recomputed from the record table by the rules the write path
follows (``catalog_app.record_sql``'s live and current-in-lane, the analyzers' SQL) and compared:
documents, group statistics and the source totals, and every posting, as ``compaction`` places
it: in the blocks exactly the postings with seq <= the watermark except the logged seqs, in the
pending rows of the member seqs exactly the others (a seq stored twice stored the same
posting). Read-only.
"""
from __future__ import annotations

from itertools import groupby

import numpy as np
from django.db import connection

from ..binary_rows import binary_rows
from ..record_sql import RECORD, current_in_lane, live, source_bytes
from .analyzers import Analyzer, maintained_analyzers, stored_columns
from .blocks import ROW, block_bytes, decode, packed_rows
from .tables import BLOCK, CHANGE, COMPACTION, DOCUMENT, GROUP, GROUP_STATS, PENDING, SOURCE_TOTALS, group_of


def lexical_check(*, workspace_id: int) -> list[str]:
    """Every difference between the index of workspace ``workspace_id`` and its records, one
    line each (empty when they agree)."""
    differences: list[str] = []
    with connection.cursor() as cursor:
        for analyzer in maintained_analyzers():
            for check in (_documents, _group_stats):
                cursor.execute(check(analyzer), {"ws": workspace_id, "analyzer": analyzer.code})
                differences += [f"{analyzer.name}: {line}" for (line,) in cursor.fetchall()]
        cursor.execute(_SOURCE_TOTALS, {"ws": workspace_id})
        differences += [line for (line,) in cursor.fetchall()]
    for analyzer in maintained_analyzers():
        rows = binary_rows(_postings(analyzer), {"ws": workspace_id, "analyzer": analyzer.code})
        differences += [f"{analyzer.name}: {line}" for _, term_rows in groupby(rows, key=lambda row: row[0])
                        for line in _term_differences(list(term_rows))]
    return differences


def _postings(analyzer: Analyzer) -> str:
    """Per (term, group), by term then group: the postings the records say (rows of ``ROW``),
    the blocks, the logged seqs, the member seqs and the watermark; with the term's first row,
    its pending rows (every group's). A term that only has pending rows comes as one row with
    a NULL group."""
    return (
        f"WITH w AS (SELECT coalesce(max(watermark), 0) AS watermark FROM {COMPACTION} "
        "WHERE workspace_id = %(ws)s AND analyzer = %(analyzer)s), "
        f"lg AS (SELECT coalesce(array_agg(DISTINCT seq), '{{}}') AS seqs FROM {CHANGE} "
        "WHERE workspace_id = %(ws)s AND analyzer = %(analyzer)s), "
        f"mb AS (SELECT coalesce(array_agg(seq), '{{}}') AS seqs FROM {DOCUMENT} WHERE workspace_id = %(ws)s "
        "AND analyzer = %(analyzer)s AND (seq > (SELECT watermark FROM w) "
        "OR seq = ANY((SELECT seqs FROM lg)::bigint[]))), "
        f"e AS (SELECT t.term, r.group_id, {packed_rows('x')} AS blob FROM ({_visible(analyzer)}) r "
        f"{analyzer.postings_sql} GROUP BY 1, 2), "
        "b AS (SELECT term, group_id, array_agg(first_seq ORDER BY first_seq) AS firsts, "
        "array_agg(last_seq ORDER BY first_seq) AS lasts, array_agg(postings ORDER BY first_seq) AS counts, "
        "array_agg(width ORDER BY first_seq) AS widths, array_agg(data ORDER BY first_seq) AS datas "
        f"FROM {BLOCK} WHERE workspace_id = %(ws)s AND analyzer = %(analyzer)s GROUP BY 1, 2), "
        f"p AS (SELECT term, string_agg(data, ''::bytea) AS pending FROM {PENDING} "
        "WHERE workspace_id = %(ws)s AND analyzer = %(analyzer)s GROUP BY 1), "
        "eb AS (SELECT coalesce(e.term, b.term) AS term, coalesce(e.group_id, b.group_id) AS group_id, e.blob, "
        "b.firsts, b.lasts, b.counts, b.widths, b.datas FROM e FULL JOIN b ON b.term = e.term "
        "AND b.group_id = e.group_id) "
        "SELECT coalesce(eb.term, p.term), eb.group_id, eb.blob, eb.firsts, eb.lasts, eb.counts, eb.widths, "
        "eb.datas, CASE WHEN row_number() OVER (PARTITION BY coalesce(eb.term, p.term) ORDER BY eb.group_id) = 1 "
        "THEN p.pending END, lg.seqs, mb.seqs, (SELECT watermark FROM w) "
        "FROM eb FULL JOIN p ON p.term = eb.term CROSS JOIN lg CROSS JOIN mb ORDER BY 1, 2")


def _term_differences(rows: list[tuple]) -> list[str]:
    """``_posting_differences`` of each (term, group) of one term's rows, and of each group
    only its pending rows name."""
    pending = np.frombuffer(rows[0][8] or b"", ROW)
    logged, members, watermark = rows[0][9:]
    lines, groups = [], set()
    for term, group_id, blob, firsts, lasts, counts, widths, datas, *_ in rows:
        if group_id is not None:
            groups.add(group_id)
            lines += _posting_differences(term, group_id, blob, firsts, lasts, counts, widths, datas,
                                          pending[pending["group"] == group_id], logged, members, watermark)
    for group_id in sorted(set(pending["group"].tolist()) - groups):
        lines += _posting_differences(rows[0][0], group_id, None, None, None, None, None, None,
                                      pending[pending["group"] == group_id], logged, members, watermark)
    return lines


def _posting_differences(term, group_id, blob, firsts, lasts, counts, widths, datas, pending: np.ndarray, logged,
                         members, watermark) -> list[str]:
    """How one (term, group)'s blocks and ``pending`` postings differ from the postings its
    records say: the blocks from those with seq <= the watermark and not logged, the pending
    postings of the member seqs from the others."""
    where = f"term {term!r} in group {group_id}"
    lines: list[str] = []
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for first, last, count, width, data in zip(firsts or (), lasts or (), counts or (), widths or (), datas or ()):
        part = decode(first, count, width, data) if len(data) == block_bytes(count, width) else None
        if part is None or part[0][0] != first or part[0][-1] != last or np.any(np.diff(part[0]) <= 0) \
                or (parts and parts[-1][0][-1] >= first) or last > watermark:
            lines.append(f"blocks of {where}: block at seq {first} is malformed "
                         f"(last {last}, {count} postings, width {width})")
        if part is not None:
            parts.append(part)
    logged = set(logged or ())
    in_blocks: dict[int, tuple[int, int]] = {}
    for seqs, tfs, lengths in parts:
        in_blocks.update(zip(seqs.tolist(), zip(tfs.tolist(), lengths.tolist())))
    for seq in logged:
        in_blocks.pop(seq, None)
    members = set(members or ())
    in_pending: dict[int, tuple[int, int]] = {}
    for seq, tf, length in zip(pending["seq"].tolist(), pending["tf"].tolist(), pending["length"].tolist()):
        if seq in members and in_pending.setdefault(seq, (tf, length)) != (tf, length):
            lines.append(f"pending postings of {where}: seq {seq} is stored as tf {in_pending[seq][0]} length "
                         f"{in_pending[seq][1]} and as tf {tf} length {length}")
    rows = np.frombuffer(blob or b"", ROW)
    expected = dict(zip(rows["seq"].tolist(), zip(rows["tf"].tolist(), rows["length"].tolist())))
    tail = {seq for seq in expected if seq > watermark or seq in logged}
    lines += _compared(f"blocks of {where}", in_blocks, {s: p for s, p in expected.items() if s not in tail},
                       "should not be in a block")
    lines += _compared(f"pending postings of {where}", in_pending, {s: expected[s] for s in tail},
                       "should not be pending")
    return lines


def _compared(where: str, held: dict, expected: dict, extra: str) -> list[str]:
    lines = []
    for seq in sorted(expected.keys() | held.keys()):
        if seq not in held:
            lines.append(f"{where}: seq {seq} (tf {expected[seq][0]}) is missing")
        elif seq not in expected:
            lines.append(f"{where}: seq {seq} {extra}")
        elif held[seq] != expected[seq]:
            lines.append(f"{where}: seq {seq} holds tf {held[seq][0]} length {held[seq][1]}, "
                         f"expected tf {expected[seq][0]} length {expected[seq][1]}")
    return lines


def _visible(analyzer: Analyzer) -> str:
    """The visible records with their group (0 when the index has no group row for them, which
    ``_documents`` reports) and length."""
    return (f"SELECT r.seq, r.id, coalesce(g.id, 0) AS group_id, {analyzer.length_sql} AS length, "
            f"{stored_columns('r')} FROM {RECORD} r LEFT JOIN {GROUP} g ON {group_of('r', 'g')} "
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


_SOURCE_TOTALS = (
    f"WITH e AS (SELECT collection, count(*) AS rows, sum({source_bytes('r')}) AS bytes FROM {RECORD} r "
    "WHERE r.workspace_id = %(ws)s GROUP BY collection), "
    f"s AS (SELECT * FROM {SOURCE_TOTALS} WHERE workspace_id = %(ws)s) "
    "SELECT format('source totals of collection %%L: %%s rows, %%s bytes; expected %%s rows, %%s bytes', "
    "coalesce(s.collection, e.collection), coalesce(s.rows, 0), coalesce(s.bytes, 0), coalesce(e.rows, 0), "
    "coalesce(e.bytes, 0)) FROM e FULL JOIN s ON s.collection = e.collection "
    "WHERE coalesce(s.rows, 0) <> coalesce(e.rows, 0) OR coalesce(s.bytes, 0) <> coalesce(e.bytes, 0) "
    "ORDER BY coalesce(s.collection, e.collection)")
