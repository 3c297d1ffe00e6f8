"""The format of a compacted posting block, and splitting a posting run into blocks.

A block holds one (term, group)'s postings with ``first_seq <= seq <= last_seq``, ascending by
seq, as three little-endian arrays one after the other: the offsets ``seq - first_seq``
(uint32), the tfs, then the lengths, both unsigned integers of ``width`` bytes (1, 2 or 4: the
narrowest that holds the block's largest value). So the bench's postings take 6 bytes each
instead of a B-tree entry of about 40, and numpy reads a block without a copy.

Posting rows read or stored in bulk (pending rows, an entity scope's postings, a full
compaction's) travel in one wire format too: ``packed_rows`` is the SQL aggregate that packs a
set of (seq, group, tf, length) rows into one big-endian ``bytea``, ``ROW`` the numpy dtype that
reads it. The group travels with each posting, so one packed value can hold a term's postings
of every group.

Pure numpy: no database.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BLOCK_POSTINGS = 8192  # the most postings a block holds
SMALL_BLOCK = BLOCK_POSTINGS // 4  # a last block smaller than this takes new postings in; a bigger one is left whole
_WIDTHS: dict[int, np.dtype] = {1: np.dtype("<u1"), 2: np.dtype("<u2"), 4: np.dtype("<u4")}
_WIDEST = {size: int(np.iinfo(dtype).max) for size, dtype in _WIDTHS.items()}
_OFFSET = np.dtype("<u4")
_MAX_OFFSET = 2 ** 32 - 1
ROW = np.dtype([("seq", ">i8"), ("group", ">i4"), ("tf", ">i4"), ("length", ">i4")])


def packed_rows(alias: str) -> str:
    """SQL: the posting rows ``alias`` aggregated, in no particular order (so the grouping can
    hash instead of sorting every row), into the bytes of ``ROW``."""
    return (f"string_agg(int8send({alias}.seq) || int4send({alias}.group_id) || int4send({alias}.tf) "
            f"|| int4send({alias}.length), ''::bytea)")


@dataclass(frozen=True, slots=True)
class Block:
    first_seq: int
    last_seq: int
    postings: int
    width: int
    data: bytes


def block_bytes(postings: int, width: int) -> int:
    """The byte size of a block of ``postings`` at ``width``."""
    return (4 + 2 * width) * postings


def decode(first_seq: int, postings: int, width: int, data: bytes,
           start: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(seqs int64, tfs, lengths float64) of the block whose data begins at byte ``start`` of
    ``data``."""
    seqs, tfs, lengths = np.empty(postings, np.int64), np.empty(postings), np.empty(postings)
    decode_into(first_seq, postings, width, data, start, seqs, tfs, lengths)
    return seqs, tfs, lengths


def decode_into(first_seq: int, postings: int, width: int, data: bytes, start: int, seqs: np.ndarray,
                tfs: np.ndarray | None, lengths: np.ndarray | None) -> None:
    """``decode`` written into the given arrays (of ``postings`` values each), converting as it
    copies; the tfs and lengths only when their arrays are given."""
    offsets = np.frombuffer(data, _OFFSET, postings, offset=start)
    np.add(offsets, first_seq, out=seqs, casting="unsafe")
    if tfs is not None:
        tfs[:] = np.frombuffer(data, _WIDTHS[width], postings, offset=start + 4 * postings)
    if lengths is not None:
        lengths[:] = np.frombuffer(data, _WIDTHS[width], postings, offset=start + (4 + width) * postings)


def split(seqs: np.ndarray, tfs: np.ndarray, lengths: np.ndarray) -> list[Block]:
    """Ascending postings cut into blocks of at most ``BLOCK_POSTINGS``, each spanning less
    than 2**32 seqs."""
    return [block for _, block in split_runs(seqs, tfs, lengths, np.array([0, seqs.size]))]


def split_runs(seqs: np.ndarray, tfs: np.ndarray, lengths: np.ndarray,
               bounds: np.ndarray) -> list[tuple[int, Block]]:
    """``split`` of every run ``i`` (the postings ``bounds[i]:bounds[i + 1]``, each run
    ascending, the runs one after the other), as (i, block) in order: numpy over all the runs at
    once, then a few slices per block, instead of several numpy calls per block."""
    starts, ends, runs = _cuts(seqs, np.asarray(bounds, np.int64))
    if not starts.size:
        return []
    counts = ends - starts
    firsts = seqs[starts]
    largest = np.maximum.reduceat(np.maximum(tfs, lengths), starts)
    widths = np.select([largest <= _WIDEST[1], largest <= _WIDEST[2]], [1, 2], 4)
    offsets = np.asarray(seqs - np.repeat(firsts, counts), _OFFSET).tobytes()
    # Per width, the tfs and lengths of its blocks, packed one block after another.
    packed, place = {}, np.empty(starts.size, np.int64)
    for width, dtype in _WIDTHS.items():
        mine = widths == width
        if mine.any():
            chosen = np.repeat(mine, counts)
            packed[width] = (np.asarray(tfs[chosen], dtype).tobytes(), np.asarray(lengths[chosen], dtype).tobytes())
            place[mine] = np.cumsum(counts[mine]) - counts[mine]
    blocks = []
    for run, start, end, count, first, width, at in zip(runs.tolist(), starts.tolist(), ends.tolist(),
                                                         counts.tolist(), firsts.tolist(), widths.tolist(),
                                                         place.tolist()):
        run_tfs, run_lengths = packed[width]
        data = (offsets[4 * start:4 * end] + run_tfs[width * at:width * (at + count)]
                + run_lengths[width * at:width * (at + count)])
        blocks.append((run, Block(first, int(seqs[end - 1]), count, width, data)))
    return blocks


def _cuts(seqs: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The blocks' (starts, ends, runs) of ``split_runs``: every ``BLOCK_POSTINGS`` postings of
    a run, except in a run where such a block would span 2**32 seqs or more, which is cut
    posting by posting's reach instead."""
    counts = np.diff(bounds)
    per_run = -(-counts // BLOCK_POSTINGS)
    runs = np.repeat(np.arange(counts.size), per_run)
    nth = np.arange(runs.size) - np.repeat(np.cumsum(per_run) - per_run, per_run)
    starts = bounds[runs] + nth * BLOCK_POSTINGS
    ends = np.minimum(starts + BLOCK_POSTINGS, bounds[runs + 1])
    too_wide = np.unique(runs[seqs[ends - 1] - seqs[starts] > _MAX_OFFSET]) if starts.size else runs
    if not too_wide.size:
        return starts, ends, runs
    keep = ~np.isin(runs, too_wide)
    cut = [(starts[keep], ends[keep], runs[keep])]
    for run in too_wide.tolist():
        start, stop, found = int(bounds[run]), int(bounds[run + 1]), []
        while start < stop:
            end = min(start + BLOCK_POSTINGS, stop)
            end = start + int(np.searchsorted(seqs[start:end], seqs[start] + _MAX_OFFSET, side="right"))
            found.append((start, end))
            start = end
        cut.append((np.array([s for s, _ in found]), np.array([e for _, e in found]), np.full(len(found), run)))
    starts, ends, runs = (np.concatenate(column) for column in zip(*cut))
    order = np.argsort(starts, kind="stable")
    return starts[order], ends[order], runs[order]
