"""Reads for draft review: the pending draft of each keyed slot beside the slot's active value.

Invariants: scoped to one workspace first; a page costs three queries whatever the table size
(pending slots by LIMIT/OFFSET in the keyed-lane index order, their active heads, the rows);
no COUNT — a page says whether another follows. The pending draft of a slot is the head of its
draft lane unless that head is a withdrawal (``services.review``); ready or not.
"""
from __future__ import annotations

import difflib
from itertools import groupby

from django.db import connection

from memseek_site.errors import ApiError

from .models import Record, Workspace
from .record_rows import UNREAD_COLUMNS
from .record_sql import RECORD, current_in_lane
from .selectors import SYSTEM_COLLECTION

MAX_PER_PAGE = 100

_PENDING_SQL = f"""
WITH heads AS (
    SELECT r.id, r.entity, r.collection, r.key, r.tombstone, r.derived_from
    FROM {RECORD} r
    WHERE r.workspace_id = %(workspace)s AND r.status = 'draft' AND r.key IS NOT NULL AND r.collection <> %(system)s
      {{entity_filter}} AND {current_in_lane("r").sql}
)
SELECT h.id, h.entity, h.collection, h.key FROM heads h
WHERE NOT (h.tombstone AND EXISTS (
    SELECT 1 FROM {RECORD} p
    WHERE p.workspace_id = %(workspace)s AND p.id = ANY(h.derived_from) AND p.entity = h.entity
      AND p.collection = h.collection AND p.key = h.key AND p.status = 'draft'))
  -- an approved draft stays its lane's head; the active value that cites it settles it
  AND NOT EXISTS (
    SELECT 1 FROM {RECORD} a
    WHERE a.workspace_id = %(workspace)s AND a.entity = h.entity AND a.collection = h.collection
      AND a.key = h.key AND a.status = 'active' AND a.derived_from @> ARRAY[h.id])
ORDER BY h.entity, h.collection, h.key
LIMIT %(limit)s OFFSET %(offset)s
"""

_ACTIVE_HEADS_SQL = f"""
SELECT r.id, r.entity, r.collection, r.key
FROM {RECORD} r
JOIN unnest(%s::text[], %s::text[], %s::text[]) AS slot(entity, collection, key)
  ON r.entity = slot.entity AND r.collection = slot.collection AND r.key = slot.key
WHERE r.workspace_id = %s AND r.status = 'active' AND {current_in_lane("r").sql}
"""


def draft_slots(*, workspace: Workspace, entity: str | None = None, page: int = 1, per_page: int = 25) -> dict:
    """Return one page of pending drafts, grouped by entity, slots ordered by (collection, key).

    Returns ``{"entities": [{"entity", "slots": [slot, ...]}, ...], "page", "per_page",
    "has_previous", "has_next"}`` where each slot is ``{"entity", "collection", "key",
    "proposal": "value" | "retraction", "draft": row, "active": row | None, "stale": bool,
    "diff": {"text": str, "content": [change, ...]}}``. ``stale`` is true when the active value
    changed after the draft was written (approving it would be ``409 promotion_stale``). A row is
    ``review_row(record)``; ``diff.text`` is a unified diff from the active text to the draft
    text (empty when equal) and ``diff.content`` lists ``{"key", "change": "added" | "removed" |
    "changed", "active", "draft"}`` per top-level content key other than ``text``.

    Raises ``ApiError('request_schema')`` for ``page < 1`` or ``per_page`` outside 1..100.
    """
    if isinstance(page, bool) or not isinstance(page, int) or page < 1:
        raise ApiError("request_schema", f"page must be a positive integer, got {page!r}", path="page")
    if isinstance(per_page, bool) or not isinstance(per_page, int) or not 1 <= per_page <= MAX_PER_PAGE:
        raise ApiError("request_schema", f"per_page must be 1..{MAX_PER_PAGE}, got {per_page!r}", path="per_page")
    params = {"workspace": workspace.pk, "system": SYSTEM_COLLECTION, "entity": entity,
              "limit": per_page + 1, "offset": (page - 1) * per_page}
    sql = _PENDING_SQL.format(entity_filter="AND r.entity = %(entity)s" if entity is not None else "")
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        pending = cursor.fetchall()
    has_next = len(pending) > per_page
    pending = pending[:per_page]
    active_ids = _active_heads(workspace, [(e, c, k) for _, e, c, k in pending])
    rows = _rows([row[0] for row in pending] + list(active_ids.values()))
    slots = [_slot(rows[draft_id], rows[active_ids[(e, c, k)]] if (e, c, k) in active_ids else None)
             for draft_id, e, c, k in pending]
    return {
        "entities": [{"entity": name, "slots": list(group)}
                     for name, group in groupby(slots, key=lambda s: s["entity"])],
        "page": page,
        "per_page": per_page,
        "has_previous": page > 1,
        "has_next": has_next,
    }


def review_row(record: Record) -> dict:
    """A record as review screens and the approve/reject routes show it (JSON-ready)."""
    return {
        "id": str(record.id),
        "seq": record.workspace_seq,
        "entity": record.entity,
        "collection": record.collection,
        "collection_version": record.collection_version,
        "key": record.key,
        "type": record.type,
        "status": record.status,
        "text": record.text,
        "content": record.content,
        "scores": record.scores,
        "annotations": record.annotations,
        "tombstone": record.tombstone,
        "ready": record.ready,
        "depth": record.depth,
        "derived_from": [str(parent) for parent in record.derived_from],
        "occurred_at": record.occurred_at.isoformat(),
        "created_at": record.created_at.isoformat(),
    }


def text_diff(active_text: str, draft_text: str) -> str:
    """Unified diff (no context limit) from the active text to the draft text; empty when equal."""
    lines = difflib.unified_diff(active_text.splitlines(), draft_text.splitlines(), "active", "draft", lineterm="")
    return "\n".join(lines)


def content_changes(active_content: dict, draft_content: dict) -> list[dict]:
    """Top-level content keys (other than ``text`` and ``tombstone``) that differ, sorted."""
    changes = []
    for key in sorted((set(active_content) | set(draft_content)) - {"text", "tombstone"}):
        before, after = active_content.get(key), draft_content.get(key)
        if key not in active_content:
            changes.append({"key": key, "change": "added", "active": None, "draft": after})
        elif key not in draft_content:
            changes.append({"key": key, "change": "removed", "active": before, "draft": None})
        elif before != after:
            changes.append({"key": key, "change": "changed", "active": before, "draft": after})
    return changes


def _rows(ids) -> dict:
    return {record.id: record for record in Record.objects.filter(id__in=ids).defer(*UNREAD_COLUMNS)} if ids else {}


def _active_heads(workspace: Workspace, slots: list[tuple[str, str, str]]) -> dict[tuple[str, str, str], object]:
    """The id of the newest active row of each slot that has one."""
    if not slots:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(_ACTIVE_HEADS_SQL, [[s[0] for s in slots], [s[1] for s in slots], [s[2] for s in slots],
                                           workspace.pk])
        return {(entity, collection, key): record_id for record_id, entity, collection, key in cursor.fetchall()}


def _slot(draft: Record, active: Record | None) -> dict:
    active_text = active.text if active is not None and not active.tombstone else ""
    active_content = active.content if active is not None and not active.tombstone else {}
    draft_content = draft.content if not draft.tombstone else {}
    return {
        "entity": draft.entity,
        "collection": draft.collection,
        "key": draft.key,
        "proposal": "retraction" if draft.tombstone else "value",
        "draft": review_row(draft),
        "active": review_row(active) if active is not None else None,
        "stale": active is not None and active.seq > draft.seq,
        "diff": {"text": text_diff(active_text, draft.text), "content": content_changes(active_content, draft_content)},
    }
