"""Migration 0018 on a database the posting-row index wrote: the rows above each watermark (or
logged) become pending rows, documents above a watermark without a change row (indexed before
the change log existed) get one, and every query and the check agree with the records after.
Migration 0020 splits pending rows by group on the way back and joins them by term again."""
import numpy as np
import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from catalog_app.lexical.analyzers import maintained_analyzers
from catalog_app.lexical.block_cache import BLOCKS
from catalog_app.lexical.blocks import ROW
from catalog_app.lexical.check import lexical_check
from catalog_app.lexical.compaction import lexical_compact
from catalog_app.lexical.query import IndexScope, index_top_k
from catalog_app.lexical.tables import CHANGE, COMPACTION, DOCUMENT, PENDING
from catalog_app.record_sql import RECORD
from tests.catalog_app.lexical_support import load_lexical_catalog, maintain_two_analyzers, write

BEFORE = "0017_lexical_block_digest"
BY_GROUP = "0019_record_recent_collection"  # the last one with pending rows per (term, group)
TERMS = ("alpha", "beta1", "value", "gamma")
_BY_GROUP_ROW = np.dtype([("seq", ">i8"), ("tf", ">i4"), ("length", ">i4")])


def migrate(target: str | None = None) -> None:
    """Migrate catalog_app to ``target``, or to its latest migration (what the code reads)."""
    # The test's writes leave deferred foreign-key checks pending, and PostgreSQL refuses to
    # create an index (a later migration, unapplied on the way back) on a table that has some.
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes("catalog_app") if target is None else [("catalog_app", target)])


def rows(statement, params=()):
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.fetchall() if cursor.description else None


def answers(ws) -> list:
    BLOCKS.clear()
    return [index_top_k(workspace_id=ws.pk, analyzer=analyzer.name, terms=TERMS, k=20, scope=IndexScope())
            for analyzer in maintained_analyzers()]


@pytest.fixture
def ws(workspace, tmp_path, settings):
    maintain_two_analyzers(settings)
    load_lexical_catalog(workspace, tmp_path / "catalog")
    write(workspace, *({"text": f"alpha beta{i % 3} gamma"} for i in range(6)),
          {"text": "old value", "type": "fact", "key": "k"})
    lexical_compact(workspace_id=workspace.pk)  # blocks up to a watermark
    write(workspace, {"text": "new value alpha", "type": "fact", "key": "k"}, {"text": "alpha beta1 later"},
          {"text": "pending", "collection": "slow"})
    return workspace


def test_the_rows_above_each_watermark_become_pending_rows(ws):
    want = answers(ws)
    # The postings the posting-row index held: one row per visible record and term.
    truth = {analyzer.code: rows(
        f"SELECT d.workspace_id, t.term, d.seq, d.group_id, t.tf, d.length FROM {DOCUMENT} d "
        f"JOIN {RECORD} r ON r.seq = d.seq CROSS JOIN {analyzer.terms_sql} "
        "WHERE d.workspace_id = %s AND d.analyzer = %s", [ws.pk, analyzer.code]) for analyzer in maintained_analyzers()}
    migrate(BEFORE)
    for code, postings in truth.items():
        with connection.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO catalog_app_lexical_posting (workspace_id, analyzer, term, seq, group_id, tf, length) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s)",
                [(w, code, term, seq, group, tf, length) for w, term, seq, group, tf, length in postings])
    # The english index as one built before the change log: its documents above the watermark unlogged.
    rows(f"DELETE FROM {CHANGE} c USING {COMPACTION} w WHERE c.workspace_id = %s AND c.analyzer = 2 "
         "AND w.workspace_id = c.workspace_id AND w.analyzer = c.analyzer AND c.seq > w.watermark", [ws.pk])
    migrate()
    assert rows(f"SELECT count(*) FROM {PENDING} WHERE workspace_id = %s AND analyzer = 2", [ws.pk])[0][0] > 0
    assert rows(f"SELECT count(*) FROM {CHANGE} WHERE workspace_id = %s AND analyzer = 2", [ws.pk])[0][0] > 0
    assert lexical_check(workspace_id=ws.pk) == []
    assert answers(ws) == want
    lexical_compact(workspace_id=ws.pk)
    assert lexical_check(workspace_id=ws.pk) == []
    assert answers(ws) == want


def pending_postings(ws, by_group: bool) -> list[tuple]:
    """Every pending posting of the workspace as (analyzer, term, change, seq, group, tf, length),
    read from the table as migration 0020 (``by_group=False``) or 0019 leaves it."""
    columns = "analyzer, term, change_id, group_id, data" if by_group else "analyzer, term, change_id, 0, data"
    found = []
    for analyzer, term, change_id, group_id, data in rows(f"SELECT {columns} FROM {PENDING} WHERE workspace_id = %s",
                                                           [ws.pk]):
        table = np.frombuffer(bytes(data), _BY_GROUP_ROW if by_group else ROW)
        groups = [group_id] * table.size if by_group else table["group"].tolist()
        found += [(analyzer, term, change_id, seq, group, tf, length) for seq, group, tf, length
                  in zip(table["seq"].tolist(), groups, table["tf"].tolist(), table["length"].tolist())]
    return sorted(found)


def test_pending_rows_split_by_group_on_the_way_back_and_join_by_term_again(ws):
    want, postings = answers(ws), pending_postings(ws, by_group=False)
    count = rows(f"SELECT count(*) FROM {PENDING} WHERE workspace_id = %s", [ws.pk])[0][0]
    assert len({group for *_, group, _, _ in postings}) > 1  # the fixture writes into several groups
    migrate(BY_GROUP)
    assert pending_postings(ws, by_group=True) == postings
    assert rows(f"SELECT count(*) FROM {PENDING} WHERE workspace_id = %s", [ws.pk])[0][0] > count
    migrate()
    assert pending_postings(ws, by_group=False) == postings
    assert rows(f"SELECT count(*) FROM {PENDING} WHERE workspace_id = %s", [ws.pk])[0][0] == count
    assert lexical_check(workspace_id=ws.pk) == []
    assert answers(ws) == want
