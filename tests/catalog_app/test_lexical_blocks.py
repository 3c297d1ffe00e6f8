"""Properties: ``blocks.split_runs`` (numpy over every run at once) cuts and encodes exactly as
the simple per-block code below, the oracle: one block at a time, cut at the block size or
before its offsets would overflow, each block's tfs and lengths in the narrowest width. And the
compaction's ordering of postings by (pair, seq) is lexsort's."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from catalog_app.lexical import blocks
from catalog_app.lexical.compaction import by_pair_then_seq

OFFSET_LIMIT = 2 ** 32 - 1
WIDTHS = ((1, "<u1"), (2, "<u2"), (4, "<u4"))


def oracle_encode(seqs, tfs, lengths) -> blocks.Block:
    first = int(seqs[0])
    largest = int(max(tfs.max(), lengths.max()))
    width, dtype = next((size, dtype) for size, dtype in WIDTHS if largest < 256 ** size)
    data = (np.asarray(seqs - first, "<u4").tobytes() + np.asarray(tfs, dtype).tobytes()
            + np.asarray(lengths, dtype).tobytes())
    return blocks.Block(first, int(seqs[-1]), int(seqs.size), width, data)


def oracle_split(seqs, tfs, lengths, size) -> list[blocks.Block]:
    found, start = [], 0
    while start < seqs.size:
        end = start + 1
        while end < seqs.size and end - start < size and seqs[end] - seqs[start] <= OFFSET_LIMIT:
            end += 1
        found.append(oracle_encode(seqs[start:end], tfs[start:end], lengths[start:end]))
        start = end
    return found


gap = st.one_of(st.integers(1, 3), st.integers(1, 2 ** 31), st.just(2 ** 32))
value = st.one_of(st.sampled_from((255, 256, 65_535, 65_536)), st.integers(0, 300), st.integers(0, 70_000),
                  st.integers(0, 2 ** 32 - 1))
run = st.lists(st.tuples(gap, value, value), max_size=12)


@settings(max_examples=300, deadline=None)
@given(runs=st.lists(run, max_size=6), size=st.integers(1, 5), start=st.integers(0, 2 ** 40))
def test_split_runs_equals_splitting_each_run_block_by_block(runs, size, start):
    previous = blocks.BLOCK_POSTINGS
    blocks.BLOCK_POSTINGS = size
    try:
        columns, want, bounds = [[], [], []], [], [0]
        for i, postings in enumerate(runs):
            seqs = start + np.cumsum([g for g, _, _ in postings], dtype=np.int64)
            tfs = np.array([t for _, t, _ in postings], np.float64)
            lengths = np.array([n for _, _, n in postings], np.float64)
            want += [(i, block) for block in oracle_split(seqs, tfs, lengths, size)]
            for column, values in zip(columns, (seqs, tfs, lengths)):
                column.append(values)
            bounds.append(bounds[-1] + len(postings))
        seqs, tfs, lengths = (np.concatenate(column) if runs else np.empty(0) for column in columns)
        got = blocks.split_runs(seqs.astype(np.int64), tfs, lengths, np.array(bounds))
    finally:
        blocks.BLOCK_POSTINGS = previous
    assert got == want


@settings(max_examples=300, deadline=None)
@given(postings=st.lists(st.tuples(st.integers(0, 50), st.one_of(st.integers(0, 40), st.integers(0, 2 ** 62))),
                         max_size=40))
def test_the_pair_then_seq_order_sorts_as_lexsort(postings):
    """``by_pair_then_seq`` (one sort of a combined key, or lexsort when the key would overflow)
    orders (pair, seq) as lexsort does: equal pairs and seqs may come in either order."""
    owner = np.array([o for o, _ in postings], np.int64)
    seqs = np.array([s for _, s in postings], np.int64)
    order = by_pair_then_seq(owner, seqs)
    assert sorted(order.tolist()) == list(range(len(postings)))
    want = np.lexsort((seqs, owner))
    assert owner[order].tolist() == owner[want].tolist() and seqs[order].tolist() == seqs[want].tolist()
