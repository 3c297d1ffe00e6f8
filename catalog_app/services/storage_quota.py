"""Storage quotas: how many records, and how many bytes of record text and content, a workspace
may hold (``catalog_app.limits``: ``QUOTA_RECORDS``, ``QUOTA_BYTES`` and the workspace's
``limits.records`` and ``limits.bytes``).

The counts live in the workspace's counter row, which the record insert trigger raises for every
row it numbers (migrations 0012 and 0022), so they are exact and never drift: a write's rows and
their counts commit or roll back together. ``storage_quota_check`` runs in the write's
transaction after its rows are inserted; the trigger's row lock, held to commit, makes every
other writer of the workspace wait, so two concurrent writes can never both fit where only one
does. A write that does not fit raises ``413 quota_exceeded`` and, rolled back, changes nothing.
"""
from __future__ import annotations

from django.db import connection

from memseek_site.errors import ApiError

from ..limits import workspace_limits
from ..models import Workspace, WorkspaceRecordCounter

_COUNTER = WorkspaceRecordCounter._meta.db_table


def storage_quota_check(*, workspace: Workspace) -> None:
    """Raise ``quota_exceeded`` when the workspace, with what this transaction inserted, holds
    more records or bytes than its quota. Call it after the write's inserts, in their transaction."""
    limits = workspace_limits(workspace.settings)
    if not limits.has_quota:
        return
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT last_seq, stored_bytes FROM {_COUNTER} WHERE workspace_id = %s", [workspace.pk])
        row = cursor.fetchone()
    records, stored_bytes = row if row is not None else (0, 0)
    for quota, limit, held in (("records", limits.records, records), ("bytes", limits.bytes, stored_bytes)):
        if limit and held > limit:
            raise ApiError("quota_exceeded", f"This write would bring the workspace to {held} {quota} stored; its "
                                             f"quota is {limit}. Nothing was written: write less, or ask for a "
                                             "larger quota.", "records",
                           {"quota": quota, "limit": limit, "would_hold": held})
