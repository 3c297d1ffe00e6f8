"""Migration 0022 on a database written before it: each workspace's counter row gets the bytes
its records hold (the recount), the trigger counts the next writes, and the way back restores
the trigger that counted records only."""
from django.db import connection

from catalog_app.services.record_ingest import record_ingest_batch
from catalog_app.services.workspaces import workspace_create
from tests.catalog_app.test_lexical_migration import migrate, rows
from tests.catalog_app.test_storage_quota import recounted
from tests.retrieval_app.lexical_factories import load_lexical_catalog, note

BEFORE = "0021_dead_letter_and_task_receipt"


def stored_bytes(workspace) -> int:
    return rows("SELECT stored_bytes FROM catalog_app_workspacerecordcounter WHERE workspace_id = %s",
                [workspace.pk])[0][0]


def _copy_a_record(workspace) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
                       "AND table_name = 'catalog_app_record' AND column_name NOT IN ('id', 'seq') "
                       "AND is_generated = 'NEVER'")
        columns = ", ".join(f'"{row[0]}"' for row in cursor.fetchall())
        cursor.execute(f"INSERT INTO catalog_app_record (id, {columns}) SELECT gen_random_uuid(), {columns} "
                       "FROM catalog_app_record WHERE workspace_id = %s LIMIT 1", [workspace.pk])


def test_existing_workspaces_are_counted_and_new_writes_are_counted_by_the_trigger(workspace, tmp_path):
    other, _ = workspace_create(name="bytes-other")
    for ws, texts in ((workspace, ["first note", "é twice é"]), (other, ["x" * 300])):
        load_lexical_catalog(ws, tmp_path / f"catalog_{ws.pk}")
        record_ingest_batch(workspace=ws, items=[note(text, tags=["t"]) for text in texts])
    migrate(BEFORE)
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT column_name FROM information_schema.columns "
                           "WHERE table_name = 'catalog_app_workspacerecordcounter'")
            assert {row[0] for row in cursor.fetchall()} == {"workspace_id", "last_seq"}
        # Written while the trigger of 0012 counts records only (the way back restored it): a copy
        # of a stored row in SQL, since today's ingest writes columns later migrations add.
        _copy_a_record(other)
        assert rows("SELECT last_seq FROM catalog_app_workspacerecordcounter WHERE workspace_id = %s",
                    [other.pk]) == [(2,)]
    finally:
        migrate()
    for ws in (workspace, other):
        assert stored_bytes(ws) == recounted(ws)[1] > 0
    record_ingest_batch(workspace=workspace, items=[note("after the migration")])
    assert stored_bytes(workspace) == recounted(workspace)[1]
