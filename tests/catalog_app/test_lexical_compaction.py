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
from catalog_app.lexical.check import lexical_check
from catalog_app.lexical.compaction import _LOCK_NAMESPACE, lexical_compact
from catalog_app.lexical.query import IndexScope, index_top_k
from catalog_app.lexical.tables import BLOCK, CHANGE, COMPACTION
from tests.catalog_app.lexical_support import load_lexical_catalog, maintain_both_analyzers, oracle_top_k, write

TERMS = ("alpha", "beta1", "value", "gamma")


@pytest.fixture(autouse=True)
def _both_analyzers(settings):
    maintain_both_analyzers(settings)


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
    block = blocks.encode(seqs, tfs, lengths)
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


def test_the_first_compaction_is_full_and_folds_the_change_log(ws):
    assert rows(f"SELECT count(*) FROM {CHANGE} WHERE workspace_id = %s", [ws.pk])[0][0] > 0
    outcomes = lexical_compact(workspace_id=ws.pk)
    assert [(o.analyzer, o.full) for o in outcomes] == [("bm25_v1", True), ("english", True)]
    assert rows(f"SELECT count(*) FROM {CHANGE} WHERE workspace_id = %s", [ws.pk])[0][0] == 0
    top = rows("SELECT max(seq) FROM catalog_app_record WHERE workspace_id = %s", [ws.pk])[0][0]
    assert rows(f"SELECT DISTINCT watermark FROM {COMPACTION} WHERE workspace_id = %s", [ws.pk]) == [(top,)]
    assert rows(f"SELECT sum(postings) FROM {BLOCK} WHERE workspace_id = %s AND analyzer = 1 AND term = 'alpha'",
                [ws.pk])[0][0] == 9
    assert lexical_check(workspace_id=ws.pk) == []
    agrees_with_the_oracle(ws)


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
    block = blocks.encode(np.array([1, 2], np.int64), np.array([1, 1]), np.array([3, 3]))
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
        other.execute("SELECT pg_advisory_lock(%s, %s)", [_LOCK_NAMESPACE, ws.pk])
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
