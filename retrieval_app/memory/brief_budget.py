"""The per-workspace daily budget of ``POST /memory/search`` model calls.

A call is spent before it is made, in one statement that only increments while the day's count
is under the limit, so concurrent searches can never spend past it; a failed call still counts
(it reached the provider). Days are UTC days.
"""
from __future__ import annotations

from datetime import datetime, timezone

from django.db import connection

from memseek_site.replicas import primary_write, serving

from ..models import MemoryModelCalls

_TABLE = MemoryModelCalls._meta.db_table


def model_call_spend(*, workspace_id: int, limit: int, now: datetime | None = None) -> bool:
    """Spend one call of today's ``limit`` for the workspace; False (nothing spent) when none is left."""
    if limit <= 0:
        return False
    day = (now or datetime.now(timezone.utc)).astimezone(timezone.utc).date()
    # On the primary, also when the search itself is served by a replica: the count is a write.
    with primary_write(), connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {_TABLE} (workspace_id, day, calls) VALUES (%s, %s, 1) "
            f"ON CONFLICT (workspace_id, day) DO UPDATE SET calls = {_TABLE}.calls + 1 "
            f"WHERE {_TABLE}.calls < %s RETURNING calls", [workspace_id, day, limit])
        return cursor.fetchone() is not None


def model_calls_spent(*, workspace_id: int, now: datetime | None = None) -> int:
    """Calls spent today by the workspace."""
    day = (now or datetime.now(timezone.utc)).astimezone(timezone.utc).date()
    with serving("default"):  # the primary's count, which the spend above changes
        row = (MemoryModelCalls.objects.filter(workspace_id=workspace_id, day=day)
               .values_list("calls", flat=True).first())
    return row or 0
