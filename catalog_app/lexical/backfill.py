"""Building the lexical index for records written before it existed (``lexical_backfill``).

Resumable and idempotent: each batch of records (by ascending ``seq``) is reconciled
(``maintenance.lexical_reconcile``, which adds the visible ones the index lacks and removes what
it holds for invisible ones) and the progress row advanced in the same transaction, so a
restart continues after the last committed batch and repeating a batch changes nothing. Each
batch holds the workspace's exclusive write lock, so no ingest or readiness change of the
workspace interleaves with it. The source totals are recounted last, under the same lock, and
the workspace's blocks are then rebuilt in full (``compaction``).
"""
from __future__ import annotations

from collections.abc import Callable

from django.db import connection, transaction

from ..record_sql import RECORD, source_bytes
from ..write_locks import workspace_lock_exclusive
from .compaction import lexical_compact
from .maintenance import lexical_reconcile
from .tables import BACKFILL, BLOCK, CHANGE, COMPACTION, DOCUMENT, GROUP, GROUP_STATS, PENDING, SOURCE_TOTALS


def lexical_backfill_remaining(*, workspace_id: int) -> int:
    """How many records of the workspace the backfill has still to visit."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {RECORD} WHERE workspace_id = %s AND seq > coalesce("
                       f"(SELECT last_seq FROM {BACKFILL} WHERE workspace_id = %s), 0)", [workspace_id, workspace_id])
        return cursor.fetchone()[0]


def lexical_backfill(*, workspace_id: int, batch: int, progress: Callable[[int], object] = lambda done: None,
                     restart: bool = False) -> tuple[int, int]:
    """Reconcile every record of workspace ``workspace_id`` after the stored progress in batches
    of ``batch``, calling ``progress(records)`` after each, then recount its source totals.
    ``restart`` starts from the first record after dropping the workspace's whole index, so it
    also repairs what a reconcile does not look at, such as a lost pending row; a full compaction
    follows. Returns (documents added, documents removed)."""
    if restart:
        with transaction.atomic(), connection.cursor() as cursor:
            workspace_lock_exclusive(cursor, workspace_id)
            for table in (PENDING, DOCUMENT, BACKFILL, BLOCK, COMPACTION, CHANGE):
                cursor.execute(f"DELETE FROM {table} WHERE workspace_id = %s", [workspace_id])
            cursor.execute(f"DELETE FROM {GROUP_STATS} WHERE group_id IN "
                           f"(SELECT id FROM {GROUP} WHERE workspace_id = %s)", [workspace_id])
    added = removed = 0
    while True:
        with transaction.atomic(), connection.cursor() as cursor:
            workspace_lock_exclusive(cursor, workspace_id)
            cursor.execute(f"SELECT seq FROM {RECORD} WHERE workspace_id = %s AND seq > coalesce("
                           f"(SELECT last_seq FROM {BACKFILL} WHERE workspace_id = %s), 0) ORDER BY seq LIMIT %s",
                           [workspace_id, workspace_id, batch])
            seqs = [row[0] for row in cursor.fetchall()]
            if not seqs:
                _recount_source_totals(cursor, workspace_id)
                break
            more, fewer = lexical_reconcile(cursor, seqs)
            added, removed = added + more, removed + fewer
            cursor.execute(f"INSERT INTO {BACKFILL} (workspace_id, last_seq, finished) VALUES (%s, %s, false) "
                           "ON CONFLICT (workspace_id) DO UPDATE SET last_seq = excluded.last_seq, finished = false",
                           [workspace_id, seqs[-1]])
        progress(len(seqs))
    lexical_compact(workspace_id=workspace_id, full=True)
    return added, removed


def _recount_source_totals(cursor, workspace_id: int) -> None:
    cursor.execute(f"DELETE FROM {SOURCE_TOTALS} WHERE workspace_id = %s", [workspace_id])
    cursor.execute(f"INSERT INTO {SOURCE_TOTALS} (workspace_id, collection, rows, bytes) "
                   f"SELECT workspace_id, collection, count(*), sum({source_bytes('r')}) FROM {RECORD} r "
                   "WHERE workspace_id = %s GROUP BY 1, 2", [workspace_id])
    cursor.execute(f"UPDATE {BACKFILL} SET finished = true WHERE workspace_id = %s", [workspace_id])
