"""Compacted posting blocks: the block format, what a compaction folds in and leaves logged,
the write that enqueues one, the lock that keeps two apart, the command, and the check that
finds a block differing from the rows it copies."""
from io import StringIO

import numpy as np
import psycopg
import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from catalog_app.lexical import blocks
from catalog_app.lexical.block_cache import BLOCKS, BlockCache
from catalog_app.lexical.check import lexical_check
from catalog_app.lexical.compaction import _LOCK_NAMESPACE, lexical_compact
from catalog_app.lexical.query import IndexScope, index_top_k
from catalog_app.lexical.tables import BLOCK, CHANGE, COMPACTION, PENDING
from tests.catalog_app.lexical_support import load_lexical_catalog, maintain_two_analyzers, oracle_top_k, write

TERMS = ("alpha", "beta1", "value", "gamma")


@pytest.fixture(autouse=True)
def _two_analyzers(settings):
    maintain_two_analyzers(settings)


@pytest.fixture
def ws(workspace, tmp_path):
    load_lexical_catalog(workspace, tmp_path / "catalog")
    write(workspace, *({"text": f"alpha beta{i % 3} gamma {'alpha ' * (i % 4)}"} for i in range(9)),
          {"text": "old value", "type": "fact", "key": "k"})
    return workspace


def rows(statement, params):
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.fetchall()


def agrees_with_the_oracle(ws, k=20):
    got = index_top_k(workspace_id=ws.pk, analyzer="bm25_v1", terms=TERMS, k=k, scope=IndexScope())
    want = oracle_top_k(ws.pk, TERMS, k, IndexScope())
    assert (got.n, got.dfs, got.matched) == (want.n, want.dfs, want.matched)
    assert [uid for uid, _ in got.hits] == [uid for uid, _ in want.hits]
    assert [score for _, score in got.hits] == pytest.approx([score for _, score in want.hits], abs=1e-9)


@pytest.mark.parametrize("largest,width", [(7, 1), (255, 1), (256, 2), (65_535, 2), (65_536, 4)])
def test_a_block_round_trips_in_the_narrowest_width(largest, width):
    seqs = np.array([5, 9, 1_000_000_000], np.int64)
    tfs, lengths = np.array([1, largest, 3]), np.array([largest, 2, 40])
    [block] = blocks.split(seqs, tfs, lengths)
    assert (block.first_seq, block.last_seq, block.postings, block.width) == (5, 1_000_000_000, 3, width)
    assert len(block.data) == blocks.block_bytes(3, width) == (4 + 2 * width) * 3
    got = blocks.decode(block.first_seq, block.postings, block.width, block.data)
    assert [a.tolist() for a in got] == [seqs.tolist(), tfs.tolist(), lengths.tolist()]


def test_split_cuts_at_the_block_size_and_before_an_offset_overflows(monkeypatch):
    monkeypatch.setattr(blocks, "BLOCK_POSTINGS", 3)
    seqs = np.array([1, 2, 3, 4, 5, 2 ** 32 + 4, 2 ** 32 + 6], np.int64)
    parts = blocks.split(seqs, np.ones(7, np.int64), np.ones(7, np.int64))
    assert [(b.first_seq, b.last_seq, b.postings) for b in parts] == [
        (1, 3, 3), (4, 5, 2), (2 ** 32 + 4, 2 ** 32 + 6, 2)]


def block_contents(ws) -> list:
    return rows(f"SELECT analyzer, term, group_id, first_seq, last_seq, postings, width, data FROM {BLOCK} "
                "WHERE workspace_id = %s ORDER BY 1, 2, 3, 4", [ws.pk])


def test_the_first_compaction_folds_the_pending_rows_and_a_full_one_rebuilds_the_same(ws):
    logged = rows(f"SELECT max(seq) FROM {CHANGE} WHERE workspace_id = %s", [ws.pk])[0][0]
    assert logged is not None and rows(f"SELECT count(*) FROM {PENDING} WHERE workspace_id = %s", [ws.pk])[0][0] > 0
    outcomes = lexical_compact(workspace_id=ws.pk)
    # No blocks yet and every change since the first write logged: the pending rows hold it all.
    assert [(o.analyzer, o.full) for o in outcomes] == [("bm25_v1", False), ("english", False)]
    assert rows(f"SELECT count(*) FROM {CHANGE} WHERE workspace_id = %s", [ws.pk])[0][0] == 0
    assert rows(f"SELECT count(*) FROM {PENDING} WHERE workspace_id = %s", [ws.pk])[0][0] == 0
    assert rows(f"SELECT DISTINCT watermark FROM {COMPACTION} WHERE workspace_id = %s", [ws.pk]) == [(logged,)]
    assert rows(f"SELECT sum(postings) FROM {BLOCK} WHERE workspace_id = %s AND analyzer = 1 AND term = 'alpha'",
                [ws.pk])[0][0] == 9
    assert lexical_check(workspace_id=ws.pk) == []
    agrees_with_the_oracle(ws)
    folded = block_contents(ws)
    outcomes = lexical_compact(workspace_id=ws.pk, full=True)  # from the records themselves
    assert [o.full for o in outcomes] == [True, True]
    top = rows("SELECT max(seq) FROM catalog_app_record WHERE workspace_id = %s", [ws.pk])[0][0]
    assert rows(f"SELECT DISTINCT watermark FROM {COMPACTION} WHERE workspace_id = %s", [ws.pk]) == [(top,)]
    assert block_contents(ws) == folded
    assert lexical_check(workspace_id=ws.pk) == []


def test_writes_after_a_compaction_are_read_from_the_rows_until_the_next(ws, monkeypatch):
    monkeypatch.setattr(blocks, "BLOCK_POSTINGS", 4)
    lexical_compact(workspace_id=ws.pk)
    write(ws, {"text": "new value alpha"}, {"text": "newer value", "type": "fact", "key": "k"},
          *({"text": f"alpha gamma{i}"} for i in range(5)))
    logged = rows(f"SELECT count(*) FROM {CHANGE} WHERE workspace_id = %s AND analyzer = 1", [ws.pk])[0][0]
    assert logged == 1 + 2 + 5  # the new records, and the fact they superseded
    agrees_with_the_oracle(ws)
    assert lexical_check(workspace_id=ws.pk) == []
    outcomes = lexical_compact(workspace_id=ws.pk)
    assert [(o.full, o.changes) for o in outcomes][0] == (False, logged)
    assert rows(f"SELECT count(*) FROM {CHANGE} WHERE workspace_id = %s", [ws.pk])[0][0] == 0
    assert lexical_check(workspace_id=ws.pk) == []
    agrees_with_the_oracle(ws)
    assert lexical_compact(workspace_id=ws.pk)[0].blocks_written == 0  # nothing logged, nothing rebuilt


def test_the_check_finds_a_block_that_differs_from_its_rows(ws):
    lexical_compact(workspace_id=ws.pk)
    [block] = blocks.split(np.array([1, 2], np.int64), np.array([1, 1]), np.array([3, 3]))
    rows(f"UPDATE {BLOCK} SET data = %s, postings = 2, first_seq = 1, last_seq = 2, width = 1 "
         "WHERE workspace_id = %s AND analyzer = 1 AND term = 'gamma' RETURNING 1", [block.data, ws.pk])
    differences = lexical_check(workspace_id=ws.pk)
    assert any("bm25_v1: blocks of term 'gamma'" in line and "is missing" in line for line in differences)
    assert any("seq 1 should not be in a block" in line for line in differences)
    with pytest.raises(CommandError):
        call_command("lexical_check", "--workspace", str(ws.pk), stdout=StringIO())


def test_the_check_reports_a_truncated_block_as_malformed(ws):
    lexical_compact(workspace_id=ws.pk)
    rows(f"UPDATE {BLOCK} SET data = substring(data from 2) WHERE workspace_id = %s AND analyzer = 1 "
         "AND term = 'gamma' RETURNING 1", [ws.pk])
    differences = lexical_check(workspace_id=ws.pk)
    assert any("bm25_v1: blocks of term 'gamma'" in line and "is malformed" in line for line in differences)
    assert any("bm25_v1: blocks of term 'gamma'" in line and "is missing" in line for line in differences)


def test_reaching_the_change_threshold_enqueues_a_compaction_after_commit(ws, settings,
                                                                         django_capture_on_commit_callbacks):
    settings.MEMSEEK = {**settings.MEMSEEK, "LEXICAL_COMPACT_CHANGES": 30}
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        write(ws, {"text": "one more alpha"})
    assert not callbacks  # 2 x 11 changes logged: below the threshold
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        write(ws, *({"text": f"alpha {i}"} for i in range(4)))
    assert len(callbacks) == 1
    assert rows(f"SELECT count(*) FROM {CHANGE} WHERE workspace_id = %s", [ws.pk])[0][0] == 0
    assert rows(f"SELECT count(*) FROM {COMPACTION} WHERE workspace_id = %s", [ws.pk])[0][0] == 2
    agrees_with_the_oracle(ws)


def test_a_second_compaction_of_a_workspace_returns_at_once(ws):
    settings_dict = connection.settings_dict
    other = psycopg.connect(host=settings_dict["HOST"], port=settings_dict["PORT"] or None,
                            dbname=settings_dict["NAME"], user=settings_dict["USER"], autocommit=True)
    try:
        # Held by a transaction, as a running compaction holds it: one server session throughout even
        # behind a transaction pooler, and released at its end, not by the close (the server ends a
        # closed session after close() returns).
        with other.transaction():
            other.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_LOCK_NAMESPACE, ws.pk])
            assert lexical_compact(workspace_id=ws.pk) is None
            with pytest.raises(CommandError) as failure:
                call_command("lexical_compact", "--workspace", str(ws.pk), stdout=StringIO())
            assert "another compaction" in str(failure.value)
    finally:
        other.close()
    assert lexical_compact(workspace_id=ws.pk) is not None


def test_the_compact_command_reports_each_analyzer(ws):
    out = StringIO()
    call_command("lexical_compact", "--workspace", str(ws.pk), "--full", stdout=out)
    assert "bm25_v1: full, watermark" in out.getvalue() and "english: full" in out.getvalue()
    with pytest.raises(CommandError):
        call_command("lexical_compact", "--workspace", "999999")


def block_data_sent(monkeypatch) -> list:
    """Spy on the lexical read: per call, the block data its statement sent for each term."""
    from catalog_app.lexical import query

    sent, read = [], query.binary_rows

    def spy(sql, params):
        rows = read(sql, params)
        sent.append({row[3]: row[10] for row in rows})
        return rows

    monkeypatch.setattr(query, "binary_rows", spy)
    return sent


def test_a_repeated_query_reads_its_blocks_from_the_cache_and_a_rewritten_block_again(ws, monkeypatch):
    BLOCKS.clear()
    lexical_compact(workspace_id=ws.pk)
    sent = block_data_sent(monkeypatch)
    agrees_with_the_oracle(ws)
    assert sent[-1]["alpha"] and sent[-1]["gamma"]  # cold: every term's blocks come with the statement
    cached = BLOCKS.size
    assert cached > 0
    agrees_with_the_oracle(ws)
    assert all(data is None for data in sent[-1].values())  # warm: no block data travels
    assert BLOCKS.size == cached
    write(ws, {"text": "alpha alpha gamma"})
    lexical_compact(workspace_id=ws.pk)  # rewrites the blocks of alpha and gamma
    agrees_with_the_oracle(ws)
    assert sent[-1]["alpha"] and sent[-1]["gamma"] and sent[-1]["beta1"] is None
    assert BLOCKS.size == cached + 2 * 6  # one more posting (6 bytes) in each; the old versions forgotten


def test_an_entity_scope_neither_reads_nor_forgets_cached_blocks(ws):
    BLOCKS.clear()
    lexical_compact(workspace_id=ws.pk)
    agrees_with_the_oracle(ws)
    cached = BLOCKS.size
    index_top_k(workspace_id=ws.pk, analyzer="bm25_v1", terms=TERMS, k=5, scope=IndexScope(entities=("e1",)))
    assert BLOCKS.size == cached


def test_the_cache_keeps_the_most_recently_used_blocks_within_its_bytes(settings):
    settings.MEMSEEK = {**settings.MEMSEEK, "LEXICAL_BLOCK_CACHE_BYTES": 10}
    cache = BlockCache()
    cache.keep((1, 1, "a", 1), [b"x", b"y"], {b"x": b"1234", b"y": b"5678"})
    cache.keep((1, 1, "b", 1), [b"z"], {b"z": b"abcd"})
    assert cache.held([(1, 1, "a", 1), (1, 1, "b", 1)]) == {b"y": b"5678", b"z": b"abcd"}  # x was oldest
    assert cache.size == 8
    cache.held([(1, 1, "a", 1)])  # y is now the most recent
    cache.keep((1, 1, "c", 1), [b"w"], {b"w": b"wxyz"})
    assert cache.held([(1, 1, "a", 1), (1, 1, "b", 1), (1, 1, "c", 1)]) == {b"y": b"5678", b"w": b"wxyz"}
    cache.keep((1, 1, "a", 1), [b"v"], {})  # a's blocks are now others: y is forgotten
    assert cache.held([(1, 1, "a", 1)]) == {} and cache.size == 4
    cache.keep((1, 1, "a", 1), [b"big"], {b"big": b"01234567890"})  # larger than the whole cache
    assert cache.held([(1, 1, "a", 1)]) == {}


def test_a_cache_of_zero_bytes_holds_nothing(settings):
    settings.MEMSEEK = {**settings.MEMSEEK, "LEXICAL_BLOCK_CACHE_BYTES": 0}
    cache = BlockCache()
    cache.keep((1, 1, "a", 1), [b"x"], {b"x": b"1234"})
    assert cache.held([(1, 1, "a", 1)]) == {} and cache.size == 0
