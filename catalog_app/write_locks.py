"""The workspace write-lock protocol, the one home of its lock names and its order.

Every transaction that changes a workspace's records takes, in this order:

1. the **workspace lock**: shared by writers that add or change some records (ingest, review,
   the lexical index's lane reconcile, feedback's utility rows), exclusive by the operations that
   must see the workspace still (erasure, import, the lexical backfill);
2. then the **entity lock** of every keyed entity it writes, in Python's sorted order, so two
   writers sharing entities take them in the same order and never deadlock.

All are transaction-scoped advisory locks (``pg_advisory_xact_lock*``): they end with the
transaction, so they hold through a transaction pooler, and taking one twice is harmless.
The functions take an open cursor and must run inside a transaction.
"""
from __future__ import annotations

from collections.abc import Iterable

WORKSPACE_LOCK_CLASS = 0x4D53  # "MS": the advisory-lock class of the workspace locks


def workspace_lock_shared(cursor, workspace_id: int) -> None:
    cursor.execute("SELECT pg_advisory_xact_lock_shared(%s, %s)", [WORKSPACE_LOCK_CLASS, workspace_id])


def workspace_lock_exclusive(cursor, workspace_id: int) -> None:
    cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [WORKSPACE_LOCK_CLASS, workspace_id])


def entity_locks(cursor, workspace_id: int, entities: Iterable[str]) -> None:
    """Lock each of ``entities`` of the workspace, in Python's sorted order, in one statement:
    the subquery's ``ORDER BY n`` hands the aggregate the entities in array order (PostgreSQL does
    not flatten a subquery that has an ORDER BY), whatever the database collation."""
    ordered = sorted(set(entities))
    if ordered:
        cursor.execute("SELECT count(pg_advisory_xact_lock(hashtextextended(s.entity, %s))) FROM "
                       "(SELECT l.entity FROM unnest(%s::text[]) WITH ORDINALITY AS l(entity, n) ORDER BY l.n) s",
                       [workspace_id, ordered])
