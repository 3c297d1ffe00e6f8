"""``lexical_check`` finds injected differences; ``lexical_backfill`` builds the index for
records written before it, resumes after an interruption and repeats idempotently."""
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from catalog_app.lexical.backfill import lexical_backfill, lexical_backfill_remaining
from catalog_app.lexical.check import lexical_check
from catalog_app.lexical.query import IndexScope, index_top_k, source_totals
from catalog_app.lexical.tables import CHANGE, DOCUMENT, GROUP, GROUP_STATS, PENDING, SOURCE_TOTALS
from tests.catalog_app.lexical_support import load_lexical_catalog, maintain_both_analyzers, write


@pytest.fixture(autouse=True)
def _both_analyzers(settings):
    maintain_both_analyzers(settings)


@pytest.fixture
def ws(workspace, tmp_path):
    load_lexical_catalog(workspace, tmp_path / "catalog")
    write(workspace, *({"text": f"alpha beta{i % 3} gamma"} for i in range(7)),
          {"text": "old value", "type": "fact", "key": "k"}, {"text": "new value", "type": "fact", "key": "k"},
          {"text": "pending", "collection": "slow"})
    return workspace


def sql(statement, params):
    with connection.cursor() as cursor:
        cursor.execute(statement, params)


def snapshot(ws):
    result = index_top_k(workspace_id=ws.pk, analyzer="bm25_v1", terms=("alpha", "beta1", "value"), k=20,
                         scope=IndexScope())
    return result, source_totals(workspace_id=ws.pk, collection_ids=None)


def forget_index(ws):
    """The state of a workspace written before the index existed."""
    for table in (PENDING, CHANGE, DOCUMENT, SOURCE_TOTALS):
        sql(f"DELETE FROM {table} WHERE workspace_id = %s", [ws.pk])
    sql(f"DELETE FROM {GROUP_STATS} WHERE group_id IN (SELECT id FROM {GROUP} WHERE workspace_id = %s)", [ws.pk])


def test_check_passes_on_a_maintained_index(ws):
    out = StringIO()
    call_command("lexical_check", "--workspace", str(ws.pk), stdout=out)
    assert "agrees" in out.getvalue()


@pytest.mark.parametrize("inject,expected", [
    (f"DELETE FROM {PENDING} WHERE workspace_id = %s AND analyzer = 1 AND term = 'gamma' AND %s IS NOT NULL",
     "bm25_v1: pending postings of term 'gamma' in group"),
    # the first posting's tf (bytes 13-16 of a big-endian (seq, group, tf, length) row) becomes 9
    (f"UPDATE {PENDING} SET data = overlay(data PLACING int4send(9) FROM 13) WHERE workspace_id = %s "
     "AND analyzer = 1 AND term = 'alpha' AND %s IS NOT NULL", "holds tf 9 length"),
    # the first posting's group (bytes 9-12) becomes one no record is in
    (f"UPDATE {PENDING} SET data = overlay(data PLACING int4send(999999) FROM 9) WHERE workspace_id = %s "
     "AND analyzer = 1 AND term = 'alpha' AND %s IS NOT NULL",
     "bm25_v1: pending postings of term 'alpha' in group 999999: seq"),
    (f"DELETE FROM {PENDING} WHERE workspace_id = %s AND analyzer = 2 AND %s IS NOT NULL",
     "english: pending postings of term"),
    (f"DELETE FROM {DOCUMENT} WHERE workspace_id = %s AND analyzer = 1 "
     f"AND seq = (SELECT max(seq) FROM {DOCUMENT} WHERE workspace_id = %s)", "is visible but not indexed"),
    (f"UPDATE {SOURCE_TOTALS} SET bytes = bytes + 1 WHERE workspace_id = %s AND %s IS NOT NULL",
     "source totals of collection 'notes'"),
])
def test_check_reports_an_injected_difference_and_fails(ws, inject, expected):
    sql(inject, [ws.pk, ws.pk])
    differences = lexical_check(workspace_id=ws.pk)
    assert any(expected in line for line in differences), differences
    out = StringIO()
    with pytest.raises(CommandError) as failure:
        call_command("lexical_check", "--workspace", str(ws.pk), stdout=out)
    assert failure.value.returncode == 1
    assert expected in out.getvalue()


def test_backfill_builds_the_index_of_records_written_before_it(ws):
    before = snapshot(ws)
    forget_index(ws)
    assert lexical_check(workspace_id=ws.pk)
    err = StringIO()
    call_command("lexical_backfill", "--workspace", str(ws.pk), "--batch", "3", stdout=StringIO(), stderr=err)
    assert lexical_check(workspace_id=ws.pk) == []
    assert snapshot(ws) == before
    assert "records" in err.getvalue()  # the progress bar


def test_an_interrupted_backfill_continues_where_it_stopped_and_repeats_idempotently(ws):
    forget_index(ws)
    batches = []

    def interrupt(done):
        batches.append(done)
        if len(batches) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        lexical_backfill(workspace_id=ws.pk, batch=4, progress=interrupt)
    assert lexical_backfill_remaining(workspace_id=ws.pk) == 10 - 8
    visited = []
    lexical_backfill(workspace_id=ws.pk, batch=4, progress=visited.append)
    assert visited == [2]
    assert lexical_check(workspace_id=ws.pk) == []
    assert lexical_backfill(workspace_id=ws.pk, batch=4) == (0, 0)
    assert lexical_check(workspace_id=ws.pk) == []


def test_a_restarted_backfill_repairs_what_a_reconcile_does_not_see(ws):
    before = snapshot(ws)
    sql(f"DELETE FROM {PENDING} WHERE workspace_id = %s AND term = 'gamma'", [ws.pk])
    assert lexical_check(workspace_id=ws.pk)
    call_command("lexical_backfill", "--workspace", str(ws.pk), "--restart", stdout=StringIO(), stderr=StringIO())
    assert lexical_check(workspace_id=ws.pk) == []
    assert snapshot(ws) == before


def test_commands_refuse_an_unknown_workspace(db):
    with pytest.raises(CommandError):
        call_command("lexical_check", "--workspace", "999999")
    with pytest.raises(CommandError):
        call_command("lexical_backfill", "--workspace", "999999")
