"""The format of a compacted posting block, and splitting a posting run into blocks.

A block holds one (term, group)'s postings with ``first_seq <= seq <= last_seq``, ascending by
seq, as three little-endian arrays one after the other: the offsets ``seq - first_seq``
(uint32), the tfs, then the lengths, both unsigned integers of ``width`` bytes (1, 2 or 4: the
narrowest that holds the block's largest value). So the bench's postings take 6 bytes each
instead of a B-tree entry of about 40, and numpy reads a block without a copy.

Posting rows read in bulk travel in one wire format too: ``packed_rows`` is the SQL aggregate
that packs a set of rows into one big-endian ``bytea``, ``ROW`` the numpy dtype that reads it.

Pure numpy: no database.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BLOCK_POSTINGS = 8192  # the most postings a block holds
SMALL_BLOCK = BLOCK_POSTINGS // 4  # a last block smaller than this takes new postings in; a bigger one is left whole
_WIDTHS = {1: np.dtype("<u1"), 2: np.dtype("<u2"), 4: np.dtype("<u4")}
_WIDEST = {size: int(np.iinfo(dtype).max) for size, dtype in _WIDTHS.items()}
_OFFSET = np.dtype("<u4")
_MAX_OFFSET = 2 ** 32 - 1
ROW = np.dtype([("seq", ">i8"), ("tf", ">i4"), ("length", ">i4")])


def packed_rows(alias: str) -> str:
    """SQL: the posting rows ``alias`` aggregated, in no particular order (so the grouping can
    hash instead of sorting every row), into the bytes of ``ROW``."""
    return f"string_agg(int8send({alias}.seq) || int4send({alias}.tf) || int4send({alias}.length), ''::bytea)"


@dataclass(frozen=True, slots=True)
class Block:
    first_seq: int
    last_seq: int
    postings: int
    width: int
    data: bytes


def encode(seqs: np.ndarray, tfs: np.ndarray, lengths: np.ndarray) -> Block:
    """One block of ascending ``seqs`` (at most ``BLOCK_POSTINGS``, spanning less than 2**32)."""
    first = int(seqs[0])
    largest = int(max(tfs.max(), lengths.max()))
    width = next(size for size, top in _WIDEST.items() if largest <= top)
    dtype = _WIDTHS[width]
    data = (np.asarray(seqs - first, _OFFSET).tobytes() + np.asarray(tfs, dtype).tobytes()
            + np.asarray(lengths, dtype).tobytes())
    return Block(first, int(seqs[-1]), int(seqs.size), width, data)


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
    blocks, start = [], 0
    while start < seqs.size:
        end = min(start + BLOCK_POSTINGS, seqs.size)
        end = start + int(np.searchsorted(seqs[start:end], seqs[start] + _MAX_OFFSET, side="right"))
        blocks.append(encode(seqs[start:end], tfs[start:end], lengths[start:end]))
        start = end
    return blocks
