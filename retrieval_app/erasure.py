"""What retrieval holds about erased records (``catalog_app.services.record_erase``): receipts
keep the erased ids only, each item marked ``"erased": true`` (its seq, collection and
version go), and the records' learned utility goes. Feedback rows keep the ids they were sent
with; feedback may no longer name an erased item (``retrieval_app.feedback``)."""
from __future__ import annotations

import uuid
from collections.abc import Sequence

from django.db import connection

from .models import Receipt, RecordUtility

RECEIPT = Receipt._meta.db_table


def receipts_and_utility_erase(workspace_id: int, ids: Sequence[uuid.UUID], dry_run: bool) -> dict[str, int]:
    """Count (``dry_run``) or mark the receipts that delivered any of ``ids`` and delete the
    utility rows of ``ids``; returns ``{"receipts_marked": n, "record_utilities": n}``."""
    wanted = [str(record_id) for record_id in ids]
    utilities = RecordUtility.objects.filter(workspace_id=workspace_id, record_id__in=ids)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id FROM {RECEIPT} r WHERE r.workspace_id = %s AND EXISTS (SELECT 1 FROM "
                       "jsonb_array_elements(r.items) e WHERE e->>'id' = ANY(%s) AND e->'erased' IS NULL)",
                       [workspace_id, wanted])
        receipt_ids = [row[0] for row in cursor.fetchall()]
    counts = {"receipts_marked": len(receipt_ids), "record_utilities": utilities.count()}
    if dry_run:
        return counts
    erased = set(wanted)
    for receipt in Receipt.objects.filter(pk__in=receipt_ids).select_for_update():
        receipt.items = [{"id": item["id"], "erased": True} if item["id"] in erased else item
                         for item in receipt.items]
        receipt.save(update_fields=["items"])
    utilities.delete()
    return counts


def is_erased(item: dict) -> bool:
    """Whether receipt item ``item`` names a record erased since it was delivered."""
    return bool(item.get("erased"))
