"""Concurrent retrieval slots shared by every process on the database, and the one snapshot a
lexical retrieval reads.

A slot is a PostgreSQL transaction-level advisory lock on ``(SLOT_LOCK_CLASS, i)`` for ``i`` in
``0 .. LEXICAL_RETRIEVAL_SLOTS - 1``: any gunicorn process on any host that shares the database
sees the same locks, and a slot is released when its transaction ends, however it ends (commit,
error, a killed process's connection). When every slot is taken the request is ``503
retrieval_busy`` with ``Retry-After``, before anything is read.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, transaction

from memseek_site.conf import memseek_setting
from memseek_site.errors import ApiError

# The advisory-lock class of lexical retrieval slots: "LEXS" as an int4. The two-key lock
# space never collides with single bigint keys.
SLOT_LOCK_CLASS = 0x4C455853
RETRY_AFTER_S = 1


class RetrievalBusy(ApiError):
    """Every retrieval slot is taken; ``retry_after`` seconds is the advised wait."""

    retry_after = RETRY_AFTER_S


@contextmanager
def retrieval_slot() -> Iterator[int]:
    """Hold one free slot (yields its number) inside a read-only transaction that sees one
    snapshot. Raises ``RetrievalBusy`` when none is free."""
    slots = memseek_setting("LEXICAL_RETRIEVAL_SLOTS")
    # Inside a caller's transaction (a test's) the isolation level is already fixed.
    outermost = not connection.in_atomic_block
    with transaction.atomic(), connection.cursor() as cursor:
        if outermost:
            # The first statement of the transaction: every later read sees the same snapshot.
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        # The filter stops at the first lock taken, so at most one slot is held.
        cursor.execute("SELECT slot FROM generate_series(0, %s - 1) slot "
                       "WHERE pg_try_advisory_xact_lock(%s, slot) LIMIT 1", [slots, SLOT_LOCK_CLASS])
        row = cursor.fetchone()
        if row is None:
            raise RetrievalBusy("retrieval_busy", f"All {slots} lexical retrieval slots are in use "
                                f"(LEXICAL_RETRIEVAL_SLOTS); retry after {RETRY_AFTER_S} s with bounded backoff.")
        yield row[0]

