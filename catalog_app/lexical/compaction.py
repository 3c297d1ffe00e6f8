"""Folding the changes since the last compaction into compacted blocks (``lexical_compact``).

The index's truth is the documents (the visible records, ``maintenance``) and the terms their
records hold (the analyzers' SQL); the blocks are a compact copy of their postings that a query
reads in a few values instead of one entry per posting. Per (workspace, analyzer), the
compaction row's ``watermark`` W and the change log say what the copy covers: **the blocks hold
exactly the postings of the documents with seq <= W, except for the seqs the change log
names.** Every write that adds postings also stores them as pending rows (one per term it
touched, each posting with its group), named by its change rows. So a query reads the blocks
without the logged seqs, plus the pending postings of the *member* seqs (the documents with
seq > W or a logged seq), each seq once (``query``), and gets the truth: a member's postings
were stored by the write that last added it (records never change, so every write that added it
stored the same ones), and a seq that is no document any more is no member.

Why that stays true without locking writers out. Every write that adds or removes postings
appends its seqs to the change log in its own transaction. A compaction reads the change log
*first*, then the record table's or the log's highest seq (W), then the truth (each statement
sees everything committed before it starts). So every change it read from the log was
committed before it read the truth and is in the blocks it writes; it deletes exactly the log
rows it read and the pending rows they name. A write that commits later keeps its log and
pending rows, so queries keep reading that seq from them; a write committed in between is in
the blocks *and* still logged, which only makes queries read it from its pending rows. Only one
compaction of a workspace runs at a time (a transaction-level advisory lock; a second one
returns at once).

Two modes. *Full* (``full=True``: after a backfill, or asked for): every block is dropped and
rebuilt from the truth for every seq <= W, W being the workspace's highest record seq.
*Incremental* (also a workspace's first compaction: with no blocks and every change since its
first write logged, the pending rows hold all its postings): only the blocks of the (term,
group) pairs the logged records touch are rebuilt, each over its own seq range (the range up to
the next block's first seq): the postings of the blocks it replaces without the logged seqs,
plus the logged seqs' postings where they are documents now (from the pending rows it folds).
A pair's newer postings start a block of their own after its last block unless that one holds
fewer than ``blocks.SMALL_BLOCK`` postings, which then takes them in. Either way a rebuilt
range is cut into blocks of at most ``blocks.BLOCK_POSTINGS``.

``lexical_compaction_due`` tells the write path when the log is long enough for a compaction
(setting ``LEXICAL_COMPACT_CHANGES``, counted as the span of the workspace's log ids); the task
runs after commit.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.db import connection, transaction

from memseek_site.conf import memseek_setting

from ..binary_rows import binary_rows
from ..record_sql import RECORD, id_array
from .analyzers import Analyzer, maintained_analyzers
from .blocks import ROW, SMALL_BLOCK, Block, decode, split_runs
from .bm25_topk import is_among
from .tables import BLOCK, CHANGE, COMPACTION, DOCUMENT, GROUP, PENDING, group_of

_LOCK_NAMESPACE = 0x6C78  # pg_advisory_xact_lock(namespace, workspace): one compaction per workspace
_FULL_FETCH = 64  # terms per fetch of a full compaction's server-side cursor
# A compaction's own memory for sorting and hashing (one per workspace at a time): grouping a
# few MB of folded pending rows then hashes in memory instead of sorting on disk.
_WORK_MEM = "64MB"


@dataclass(frozen=True, slots=True)
class CompactionOutcome:
    analyzer: str
    full: bool
    watermark: int
    changes: int  # change-log rows folded in
    blocks_written: int
    blocks_dropped: int


def lexical_compact(*, workspace_id: int, full: bool = False) -> list[CompactionOutcome] | None:
    """Fold workspace ``workspace_id``'s logged changes into its blocks, for every maintained
    analyzer, in one transaction; ``None`` when another compaction of the workspace holds the
    lock. ``full`` rebuilds every block."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", [_LOCK_NAMESPACE, workspace_id])
        if not cursor.fetchone()[0]:
            return None
        cursor.execute("SELECT set_config('work_mem', %s, true)", [_WORK_MEM])
        return [_compact(cursor, workspace_id, analyzer, full) for analyzer in maintained_analyzers()]


def lock_compaction(cursor, workspace_id: int) -> None:
    """Wait for workspace ``workspace_id``'s compaction lock and hold it to the end of the
    transaction (erasure: its fold must run, not be skipped as a concurrent one would be)."""
    cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_LOCK_NAMESPACE, workspace_id])


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
    cursor.execute(f"SELECT id, seq FROM {CHANGE} WHERE workspace_id = %s AND analyzer = %s", key)
    log = cursor.fetchall()
    ids = [change_id for change_id, _ in log]
    # The folded rows come back joined by term and in binary: one row per term instead of one
    # per write that touched it, and the data as bytes rather than hex text.
    added: dict[str, bytes] = dict(binary_rows(
        f"WITH folded AS (DELETE FROM {PENDING} WHERE workspace_id = %s AND analyzer = %s "
        "AND change_id = ANY(%s::bigint[]) RETURNING term, data) "
        "SELECT term, string_agg(data, ''::bytea) FROM folded GROUP BY 1", [*key, id_array(ids)]))
    if full:
        cursor.execute(f"SELECT coalesce(max(seq), 0) FROM {RECORD} WHERE workspace_id = %s", [workspace_id])
        watermark = int(cursor.fetchone()[0])
        written, dropped = _full(cursor, workspace_id, analyzer, watermark)
    else:
        watermark = max([int(found[0]) if found else 0, *(seq for _, seq in log)])
        written, dropped = _incremental(cursor, workspace_id, analyzer, watermark, sorted({seq for _, seq in log}),
                                        added)
    cursor.execute(f"INSERT INTO {COMPACTION} (workspace_id, analyzer, watermark, compacted_at) "
                   "VALUES (%s, %s, %s, now()) ON CONFLICT (workspace_id, analyzer) "
                   "DO UPDATE SET watermark = excluded.watermark, compacted_at = excluded.compacted_at",
                   [*key, watermark])
    cursor.execute(f"DELETE FROM {CHANGE} WHERE id = ANY(%s::bigint[])", [id_array(ids)])
    return CompactionOutcome(analyzer.name, full, watermark, len(log), written, dropped)


def _full(cursor, workspace_id: int, analyzer: Analyzer, watermark: int) -> tuple[int, int]:
    cursor.execute(f"DELETE FROM {BLOCK} WHERE workspace_id = %s AND analyzer = %s",
                   [workspace_id, analyzer.code])
    dropped, written = cursor.rowcount, 0
    with connection.chunked_cursor() as terms:
        terms.execute(
            "SELECT t.term, string_agg(int8send(d.seq) || int4send(d.group_id) || int4send(t.tf) "
            f"|| int4send(d.length), ''::bytea ORDER BY d.seq) FROM {DOCUMENT} d JOIN {RECORD} r ON r.seq = d.seq "
            f"CROSS JOIN {analyzer.terms_sql} WHERE d.workspace_id = %s AND d.analyzer = %s AND d.seq <= %s "
            "GROUP BY t.term", [workspace_id, analyzer.code, watermark])
        while rows := terms.fetchmany(_FULL_FETCH):
            pairs, tables = [], []
            for term, blob in rows:
                table = np.frombuffer(blob, ROW)
                table = table[np.argsort(table["group"], kind="stable")]  # seq order kept within a group
                cuts = np.flatnonzero(np.diff(table["group"])) + 1
                pairs += [(term, int(group_id)) for group_id in table["group"][np.concatenate([[0], cuts])]]
                tables.append(table)
            table = np.concatenate(tables)
            bounds = np.flatnonzero(np.diff(np.repeat(np.arange(len(tables)), [t.size for t in tables]))
                                    | np.diff(table["group"])) + 1
            runs = split_runs(table["seq"].astype(np.int64), table["tf"].astype(np.float64),
                              table["length"].astype(np.float64), np.concatenate([[0], bounds, [table.size]]))
            written += _insert(cursor, workspace_id, analyzer, [(*pairs[run], block) for run, block in runs])
    return written, dropped


def _incremental(cursor, workspace_id: int, analyzer: Analyzer, watermark: int, changed: list[int],
                 added: dict[str, bytes]) -> tuple[int, int]:
    """Rebuild the blocks of the (term, group) pairs the ``changed`` seqs touch; ``added`` holds,
    by term, the data of the pending rows of the writes folded in (what they added), joined."""
    if not changed:
        return 0, 0
    touched = _touched(cursor, analyzer, changed, added)
    if not touched.pairs:
        return 0, 0
    pairs = touched.pairs
    cursor.execute(
        f"SELECT b.term, b.group_id, array_agg(b.first_seq ORDER BY b.first_seq), "
        "array_agg(b.last_seq ORDER BY b.first_seq), array_agg(b.postings ORDER BY b.first_seq) "
        f"FROM {BLOCK} b JOIN unnest(%s::text[], %s::integer[]) q(term, group_id) "
        "ON b.term = q.term AND b.group_id = q.group_id WHERE b.workspace_id = %s AND b.analyzer = %s "
        "GROUP BY 1, 2", [[t for t, _ in pairs], id_array(g for _, g in pairs), workspace_id, analyzer.code])
    existing = {(term, group_id): (np.asarray(firsts, np.int64), lasts, counts)
                for term, group_id, firsts, lasts, counts in cursor.fetchall()}
    whole, ranges = [], []  # ``whole``: the pairs whose new blocks are just their postings to hold
    for i, pair in enumerate(pairs):
        found = _ranges(existing.get(pair), touched.changed_of(i), watermark)
        if len(found) == 1 and not found[0][2] and found[0][0] <= touched.lowest[i]:
            whole.append(i)
        else:
            ranges += [(i, lo, hi, replaced) for lo, hi, replaced in found]
    replaced = _drop(cursor, workspace_id, analyzer,
                     [(*pairs[i], first) for i, _, _, firsts in ranges for first in firsts])
    runs, parts = [pairs[i] for i in whole], [touched.postings_of(whole)]
    for i, lo, hi, firsts in ranges:
        seqs, lowest, now = touched.changed_of(i), int(touched.lowest[i]), touched.postings_of([i])[0]
        if not (lo <= lowest and hi > watermark):  # else every posting of ``now`` lies in the range
            inside = (now[0] >= lo) & (now[0] < hi)
            now = tuple(column[inside] for column in now)
        kept = []
        for first in firsts:  # the replaced blocks without the changed seqs
            part = replaced[(*pairs[i], first)]
            if part[0][-1] >= lowest:  # else only appended to (the common case): nothing to drop
                keep = ~np.isin(part[0], seqs)
                part = tuple(column[keep] for column in part)
            kept.append(part)
        if kept:
            merged = [np.concatenate(column) for column in zip(*kept, now)]
            order = np.argsort(merged[0], kind="stable")
            now = tuple(column[order] for column in merged)
        runs.append(pairs[i])
        parts.append((now, np.array([0, now[0].size])))
    seqs, tfs, lengths = (np.concatenate([postings[c] for postings, _ in parts]) for c in range(3))
    offsets = np.cumsum([0] + [postings[0].size for postings, _ in parts[:-1]])
    bounds = np.concatenate([[0]] + [b[1:] + at for (_, b), at in zip(parts, offsets)])
    blocks = [(*runs[run], block) for run, block in split_runs(seqs, tfs, lengths, bounds)]
    return _insert(cursor, workspace_id, analyzer, blocks), len(replaced)


@dataclass(frozen=True, slots=True)
class _Touched:
    """The (term, group) pairs a compaction's changed seqs touch (``pairs``, sorted). Of pair
    ``i``: its changed seqs (``changed_of(i)``, the lowest ``lowest[i]``) and the postings to
    hold for them (seqs ascending, tfs, lengths), each seq once; both arrays hold every pair's
    values one pair after another, cut at ``changed_bounds`` and ``held_bounds``."""
    pairs: list[tuple[str, int]]
    changed: np.ndarray
    changed_bounds: np.ndarray
    lowest: np.ndarray
    held: tuple[np.ndarray, np.ndarray, np.ndarray]
    held_bounds: np.ndarray

    def changed_of(self, i: int) -> np.ndarray:
        return self.changed[self.changed_bounds[i]:self.changed_bounds[i + 1]]

    def postings_of(self, chosen: list[int]) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
        """The postings to hold of the pairs ``chosen`` (ascending), one pair after another, and
        the bounds that cut them by pair."""
        starts = self.held_bounds[chosen]
        counts = self.held_bounds[np.asarray(chosen, np.int64) + 1] - starts
        bounds = np.concatenate([[0], np.cumsum(counts)])
        index = np.repeat(starts - bounds[:-1], counts) + np.arange(bounds[-1])
        return tuple(column[index] for column in self.held), bounds


def _touched(cursor, analyzer: Analyzer, changed: list[int], added: dict[str, bytes]) -> _Touched:
    """The pairs the ``changed`` seqs touch, their changed seqs and their postings to hold.

    A changed seq that is no document now was removed: its record's terms and group (records
    never change) name the pairs it leaves. Every other change added the postings its pending
    rows hold (``added``, by term; each posting names its group), so the pairs it touches are
    theirs; of those postings, the documents' count."""
    cursor.execute(f"SELECT seq FROM {DOCUMENT} WHERE analyzer = %s AND seq = ANY(%s::bigint[])",
                   [analyzer.code, id_array(changed)])
    documents = np.fromiter((row[0] for row in cursor.fetchall()), np.int64)
    gone = sorted(set(changed) - set(documents.tolist()))
    cursor.execute(
        f"SELECT t.term COLLATE \"C\", g.id, array_agg(r.seq) FROM {RECORD} r JOIN {GROUP} g ON {group_of('r', 'g')} "
        f"CROSS JOIN {analyzer.terms_sql} WHERE r.seq = ANY(%s::bigint[]) GROUP BY 1, 2", [id_array(gone)])
    left = cursor.fetchall()
    # A pair is numbered by its key (term number << 32 | group), so numpy sorts and finds pairs
    # without a Python object per posting; terms are numbered in sorted order, as pairs sort.
    terms = sorted(added.keys() | {term for term, _, _ in left})
    number = {term: i for i, term in enumerate(terms)}
    postings = np.frombuffer(b"".join(added.values()), ROW)
    term_of = np.repeat(np.array([number[term] for term in added], np.int64),
                        [len(blob) // ROW.itemsize for blob in added.values()])
    added_keys = (term_of << 32) | postings["group"].astype(np.int64)
    left_keys = np.array([number[term] << 32 | group_id for term, group_id, _ in left], np.int64)
    keys = np.unique(np.concatenate([added_keys, left_keys]))
    pairs = [(terms[key >> 32], key & 0xFFFFFFFF) for key in keys.tolist()]
    # Every pending posting at once, ordered by (pair, seq): one membership test and one pass for
    # the repeats instead of a few small numpy calls per pair.
    owner = np.searchsorted(keys, added_keys)
    seqs = postings["seq"].astype(np.int64)
    order = by_pair_then_seq(owner, seqs)
    owner, seqs = owner[order], seqs[order]
    once = np.ones(seqs.size, bool)  # a seq added twice since the last compaction counts once
    once[1:] = (owner[1:] != owner[:-1]) | (seqs[1:] != seqs[:-1])
    held = once & is_among(seqs, documents)
    chosen = order[held]  # the held postings' rows of ``postings``
    # A pair's changed seqs: its pending postings' seqs and the removed seqs that leave it.
    changed_owner, changed_seqs = owner, seqs
    if left:
        removed_owner = np.repeat(np.searchsorted(keys, left_keys), [len(removed) for _, _, removed in left])
        removed_seqs = np.fromiter((seq for *_, removed in left for seq in removed), np.int64)
        changed_owner = np.concatenate([owner, removed_owner])
        order = np.argsort(changed_owner, kind="stable")
        changed_owner, changed_seqs = changed_owner[order], np.concatenate([seqs, removed_seqs])[order]
    changed_bounds = np.searchsorted(changed_owner, np.arange(len(pairs) + 1))
    lowest = np.minimum.reduceat(changed_seqs, changed_bounds[:-1]) if pairs else changed_seqs
    return _Touched(pairs, changed_seqs, changed_bounds, lowest,
                    (seqs[held], postings["tf"][chosen].astype(np.float64),
                     postings["length"][chosen].astype(np.float64)),
                    np.searchsorted(owner[held], np.arange(len(pairs) + 1)))


def by_pair_then_seq(owner: np.ndarray, seqs: np.ndarray) -> np.ndarray:
    """The order of postings by (``owner``, ``seq``), as ``np.lexsort((seqs, owner))`` (ties in
    any order): one sort of a combined key when it fits in an int64, which is several times
    faster than sorting by two keys."""
    if not seqs.size:
        return np.empty(0, np.int64)
    low = int(seqs.min())
    span = int(seqs.max()) - low + 1
    if (int(owner.max()) + 1) * span >= 2 ** 63:
        return np.lexsort((seqs, owner))
    return np.argsort(owner * span + (seqs - low))


def _drop(cursor, workspace_id: int, analyzer: Analyzer, keys: list[tuple[str, int, int]]) -> dict:
    """Delete the blocks ``keys`` ((term, group, first seq)); returns their postings by key."""
    if not keys:
        return {}
    cursor.execute(
        f"DELETE FROM {BLOCK} b USING unnest(%s::text[], %s::integer[], %s::bigint[]) q(term, group_id, first_seq) "
        "WHERE b.workspace_id = %s AND b.analyzer = %s AND b.term = q.term AND b.group_id = q.group_id "
        "AND b.first_seq = q.first_seq RETURNING b.term, b.group_id, b.first_seq, b.postings, b.width, b.data",
        [[k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys], workspace_id, analyzer.code])
    return {(term, group_id, first): decode(first, count, width, data)
            for term, group_id, first, count, width, data in cursor.fetchall()}


def _ranges(existing, touched: np.ndarray, watermark: int) -> list[tuple[int, int, list[int]]]:
    """The seq ranges [lo, hi) of one (term, group) to rebuild, each with
    the first seqs of the blocks it replaces, given its blocks (firsts, lasts, postings; None
    when it has none) and its changed seqs ``touched``. Block i owns the seqs from its first to
    the next block's first (the first block from the lowest seq); a new range after the last
    block takes the changes above it unless that block is small."""
    everything = watermark + 1
    if existing is None:
        return [(0, everything, [])]
    firsts, lasts, counts = existing
    last = firsts.size - 1
    if int(touched.min()) > lasts[last]:  # only appended to (the common case)
        if counts[last] >= SMALL_BLOCK:
            return [(int(lasts[last]) + 1, everything, [])]
        return [(0 if last == 0 else int(firsts[last]), everything, [int(firsts[last])])]
    owner = np.maximum(np.searchsorted(firsts, touched, side="right") - 1, 0)
    beyond = (owner == last) & (touched > lasts[last]) & (counts[last] >= SMALL_BLOCK)
    ranges = [(0 if i == 0 else int(firsts[i]), int(firsts[i + 1]) if i < last else everything, [int(firsts[i])])
              for i in np.unique(owner[~beyond]).tolist()]
    if beyond.any() and not (ranges and ranges[-1][2][0] == int(firsts[last])):
        ranges.append((int(lasts[last]) + 1, everything, []))
    return ranges


_BLOCK_COLUMNS = ("workspace_id", "analyzer", "term", "group_id", "first_seq", "last_seq", "postings", "width", "data")
_BLOCK_TYPES = ("int4", "int2", "text", "int4", "int8", "int8", "int4", "int2", "bytea")


def _insert(cursor, workspace_id: int, analyzer: Analyzer, blocks: list[tuple[str, int, Block]]) -> int:
    """Write ``blocks`` with one binary COPY (block data travels as bytes, not escaped text)."""
    if blocks:
        with cursor.cursor.copy(f"COPY {BLOCK} ({', '.join(_BLOCK_COLUMNS)}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(_BLOCK_TYPES)
            for term, group_id, block in blocks:
                copy.write_row((workspace_id, analyzer.code, term, group_id, block.first_seq, block.last_seq,
                                block.postings, block.width, block.data))
    return len(blocks)
