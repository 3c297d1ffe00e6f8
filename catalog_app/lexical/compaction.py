"""Folding posting rows into compacted blocks (``lexical_compact``).

The posting rows stay the index's truth, written by every visibility change
(``maintenance``); the blocks are a compact copy of them that a query reads in a few values
instead of one B-tree entry per posting. Per (workspace, analyzer), the compaction row's
``watermark`` W and the change log say what the copy covers: **the blocks hold exactly the
posting rows with seq <= W, except for the seqs the change log names.** A query therefore
reads the blocks without the logged seqs, plus the posting rows with seq > W or a logged seq
(``query``), and gets the posting rows' answer.

Why that stays true without locking writers out. Every write that adds or removes postings
appends its seqs to the change log in its own transaction. A compaction reads the change log
*first*, then the record table's or the log's highest seq (W), then the posting rows (each
statement sees everything committed before it starts). So every change it read from the log
was committed before it read the postings and is in the blocks it writes; it deletes exactly
the log rows it read. A write that commits later keeps its log row, so queries keep reading
that seq from the rows; a write committed in between is in the blocks *and* still logged,
which only makes queries read it from the rows. Only one compaction of a workspace runs at a
time (a transaction-level advisory lock; a second one returns at once).

Two modes. *Full* (the first compaction of a workspace, ``full=True``, and after a backfill):
every block is dropped and rebuilt from every posting row with seq <= W, W being the
workspace's highest record seq. *Incremental*: only the blocks of the (term, group) pairs the
logged records hold are rebuilt, each from the posting rows of its own seq range (the range up
to the next block's first seq); a pair's newer postings start a block of their own after its
last block unless that one holds fewer than ``blocks.SMALL_BLOCK`` postings, which then takes
them in. Either way a rebuilt range is cut into blocks of at most ``blocks.BLOCK_POSTINGS``.

``lexical_compaction_due`` tells the write path when the log is long enough for a compaction
(setting ``LEXICAL_COMPACT_CHANGES``, counted as the span of the workspace's log ids); the task
runs after commit.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.db import connection, transaction

from memseek_site.conf import memseek_setting

from ..record_sql import RECORD
from .analyzers import Analyzer, maintained_analyzers
from .blocks import ROW, SMALL_BLOCK, Block, packed_rows, split
from .tables import BLOCK, CHANGE, COMPACTION, GROUP, POSTING, group_of

_LOCK_NAMESPACE = 0x6C78  # pg_advisory_xact_lock(namespace, workspace): one compaction per workspace
_WIDE_ROW = np.dtype([("seq", ">i8"), ("group", ">i4"), ("tf", ">i4"), ("length", ">i4")])
_FULL_FETCH = 64  # terms per fetch of a full compaction's server-side cursor


@dataclass(frozen=True, slots=True)
class CompactionOutcome:
    analyzer: str
    full: bool
    watermark: int
    changes: int  # change-log rows folded in
    blocks_written: int
    blocks_dropped: int


def lexical_compact(*, workspace_id: int, full: bool = False) -> list[CompactionOutcome] | None:
    """Fold workspace ``workspace_id``'s posting changes into its blocks, for every maintained
    analyzer, in one transaction; ``None`` when another compaction of the workspace holds the
    lock. ``full`` rebuilds every block."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", [_LOCK_NAMESPACE, workspace_id])
        if not cursor.fetchone()[0]:
            return None
        return [_compact(cursor, workspace_id, analyzer, full) for analyzer in maintained_analyzers()]


def lexical_compaction_due(cursor, workspace_id: int) -> bool:
    """Whether workspace ``workspace_id``'s change log spans ``LEXICAL_COMPACT_CHANGES`` ids.
    The span is read from the first and last ids (two index probes, not a count), so other
    workspaces' changes between them make it due a little sooner, never later."""
    cursor.execute(f"SELECT coalesce(max(id) - min(id) + 1, 0) FROM {CHANGE} WHERE workspace_id = %s",
                   [workspace_id])
    return cursor.fetchone()[0] >= memseek_setting("LEXICAL_COMPACT_CHANGES")


def _compact(cursor, workspace_id: int, analyzer: Analyzer, full: bool) -> CompactionOutcome:
    key = [workspace_id, analyzer.code]
    cursor.execute(f"SELECT watermark FROM {COMPACTION} WHERE workspace_id = %s AND analyzer = %s", key)
    found = cursor.fetchone()
    full = full or found is None
    cursor.execute(f"SELECT id, seq FROM {CHANGE} WHERE workspace_id = %s AND analyzer = %s", key)
    log = cursor.fetchall()
    if full:
        cursor.execute(f"SELECT coalesce(max(seq), 0) FROM {RECORD} WHERE workspace_id = %s", [workspace_id])
        watermark = int(cursor.fetchone()[0])
        written, dropped = _full(cursor, workspace_id, analyzer, watermark)
    else:
        watermark = max([int(found[0]), *(seq for _, seq in log)])
        written, dropped = _incremental(cursor, workspace_id, analyzer, watermark, sorted({seq for _, seq in log}))
    cursor.execute(f"INSERT INTO {COMPACTION} (workspace_id, analyzer, watermark, compacted_at) "
                   "VALUES (%s, %s, %s, now()) ON CONFLICT (workspace_id, analyzer) "
                   "DO UPDATE SET watermark = excluded.watermark, compacted_at = excluded.compacted_at",
                   [*key, watermark])
    cursor.execute(f"DELETE FROM {CHANGE} WHERE id = ANY(%s)", [[change_id for change_id, _ in log]])
    return CompactionOutcome(analyzer.name, full, watermark, len(log), written, dropped)


def _full(cursor, workspace_id: int, analyzer: Analyzer, watermark: int) -> tuple[int, int]:
    cursor.execute(f"DELETE FROM {BLOCK} WHERE workspace_id = %s AND analyzer = %s",
                   [workspace_id, analyzer.code])
    dropped, written = cursor.rowcount, 0
    with connection.chunked_cursor() as terms:
        terms.execute(
            "SELECT term, string_agg(int8send(seq) || int4send(group_id) || int4send(tf) || int4send(length), "
            f"''::bytea ORDER BY seq) FROM {POSTING} WHERE workspace_id = %s AND analyzer = %s AND seq <= %s "
            "GROUP BY term", [workspace_id, analyzer.code, watermark])
        while rows := terms.fetchmany(_FULL_FETCH):
            blocks = []
            for term, blob in rows:
                table = np.frombuffer(blob, _WIDE_ROW)
                by_group = table[np.argsort(table["group"], kind="stable")]  # seq order kept within a group
                cuts = np.flatnonzero(np.diff(by_group["group"])) + 1
                for part in np.split(by_group, cuts):
                    blocks += [(term, int(part["group"][0]), block)
                               for block in split(part["seq"].astype(np.int64), part["tf"], part["length"])]
            written += _insert(cursor, workspace_id, analyzer, blocks)
    return written, dropped


def _incremental(cursor, workspace_id: int, analyzer: Analyzer, watermark: int,
                 changed: list[int]) -> tuple[int, int]:
    if not changed:
        return 0, 0
    # The (term, group) pairs the changed records hold: records never change, so a removed
    # record's terms and group are still those it was indexed with.
    cursor.execute(
        f"SELECT t.term, g.id, array_agg(r.seq ORDER BY r.seq) FROM {RECORD} r JOIN {GROUP} g ON {group_of('r', 'g')} "
        f"CROSS JOIN {analyzer.terms_sql} WHERE r.seq = ANY(%s) GROUP BY 1, 2", [changed])
    touched = {(term, group_id): np.asarray(seqs, np.int64) for term, group_id, seqs in cursor.fetchall()}
    if not touched:
        return 0, 0
    pairs = sorted(touched)
    cursor.execute(
        f"SELECT b.term, b.group_id, array_agg(b.first_seq ORDER BY b.first_seq), "
        "array_agg(b.last_seq ORDER BY b.first_seq), array_agg(b.postings ORDER BY b.first_seq) "
        f"FROM {BLOCK} b JOIN unnest(%s::text[], %s::integer[]) q(term, group_id) "
        "ON b.term = q.term AND b.group_id = q.group_id WHERE b.workspace_id = %s AND b.analyzer = %s "
        "GROUP BY 1, 2", [[t for t, _ in pairs], [g for _, g in pairs], workspace_id, analyzer.code])
    existing = {(term, group_id): (np.asarray(firsts, np.int64), lasts, counts)
                for term, group_id, firsts, lasts, counts in cursor.fetchall()}
    ranges = [(term, group_id, lo, hi, replaced)
              for term, group_id in pairs
              for lo, hi, replaced in _ranges(existing.get((term, group_id)), touched[term, group_id], watermark)]
    dropped = 0
    replaced_keys = [(term, group_id, first) for term, group_id, _, _, firsts in ranges for first in firsts]
    if replaced_keys:
        cursor.execute(
            f"DELETE FROM {BLOCK} b USING unnest(%s::text[], %s::integer[], %s::bigint[]) q(term, group_id, first_seq) "
            "WHERE b.workspace_id = %s AND b.analyzer = %s AND b.term = q.term AND b.group_id = q.group_id "
            "AND b.first_seq = q.first_seq",
            [[k[0] for k in replaced_keys], [k[1] for k in replaced_keys], [k[2] for k in replaced_keys],
             workspace_id, analyzer.code])
        dropped = cursor.rowcount
    cursor.execute(
        f"SELECT q.i, (SELECT {packed_rows('p')} FROM {POSTING} p WHERE p.workspace_id = %s AND p.analyzer = %s "
        "AND p.term = q.term AND p.group_id = q.group_id AND p.seq >= q.lo AND p.seq < q.hi) "
        "FROM unnest(%s::text[], %s::integer[], %s::bigint[], %s::bigint[]) "
        "WITH ORDINALITY q(term, group_id, lo, hi, i)",
        [workspace_id, analyzer.code, [r[0] for r in ranges], [r[1] for r in ranges], [r[2] for r in ranges],
         [r[3] for r in ranges]])
    blocks = []
    for i, blob in cursor.fetchall():
        if blob:
            term, group_id = ranges[i - 1][:2]
            table = np.frombuffer(blob, ROW)
            blocks += [(term, group_id, block) for block in split(table["seq"].astype(np.int64), table["tf"],
                                                                  table["length"])]
    return _insert(cursor, workspace_id, analyzer, blocks), dropped


def _ranges(existing, touched: np.ndarray, watermark: int) -> list[tuple[int, int, list[int]]]:
    """The seq ranges [lo, hi) of one (term, group) to rebuild from its posting rows, each with
    the first seqs of the blocks it replaces, given its blocks (firsts, lasts, postings; None
    when it has none) and its changed seqs ``touched``. Block i owns the seqs from its first to
    the next block's first (the first block from the lowest seq); a new range after the last
    block takes the changes above it unless that block is small."""
    everything = watermark + 1
    if existing is None:
        return [(0, everything, [])]
    firsts, lasts, counts = existing
    last = firsts.size - 1
    owner = np.maximum(np.searchsorted(firsts, touched, side="right") - 1, 0)
    beyond = (owner == last) & (touched > lasts[last]) & (counts[last] >= SMALL_BLOCK)
    ranges = [(0 if i == 0 else int(firsts[i]), int(firsts[i + 1]) if i < last else everything, [int(firsts[i])])
              for i in np.unique(owner[~beyond]).tolist()]
    if beyond.any() and not (ranges and ranges[-1][2][0] == int(firsts[last])):
        ranges.append((int(lasts[last]) + 1, everything, []))
    return ranges


def _insert(cursor, workspace_id: int, analyzer: Analyzer, blocks: list[tuple[str, int, Block]]) -> int:
    if blocks:
        cursor.executemany(
            f"INSERT INTO {BLOCK} (workspace_id, analyzer, term, group_id, first_seq, last_seq, postings, width, data) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            [(workspace_id, analyzer.code, term, group_id, block.first_seq, block.last_seq, block.postings,
              block.width, block.data) for term, group_id, block in blocks])
    return len(blocks)
