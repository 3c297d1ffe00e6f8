"""Reviewing drafts: approve one (write its active successor) or reject it (withdraw it).

Vocabulary. A *slot* is a keyed ``(entity, collection, key)``; it has an active lane and a
draft lane (reference 2.2: a draft never replaces the active value). A *withdrawal* is a draft
tombstone that cites a draft of its own slot — what ``draft_reject`` writes. The *pending
draft* of a slot is the head (newest by ``seq``) of its draft lane unless that head is a
withdrawal. A pending draft proposes either a value or, when it is a tombstone citing only
rows outside the draft lane (typically the active value), the retraction of the active value.

Decisions:
- Only keyed drafts are reviewed. A draft without a key (an event) is refused with
  ``409 draft_not_keyed``: staleness is defined per slot, and a rejection is a keyed
  tombstone, so an event draft could be neither checked for staleness nor withdrawn. Write
  reviewed events straight into the active lane instead.
- Approving a retraction proposal writes an active tombstone citing the draft and the active
  head; with no live active value it is refused with ``409 nothing_to_retract``.
- The successor keeps the draft's collection version, type, text, content and occurred_at
  (domain time), and copies only outputs of *client* processors (server processors run again
  on the new row). It cites the draft and, when there is one, the active head it replaces.

Invariants: drafts are never changed; every write goes through ``record_ingest_batch`` so
every write-side rule applies; a refused review writes nothing; a review holds the same
entity lock as ingest while it checks and writes, so no write to the slot can slip between
the staleness check and the successor; each review writes one ``ReviewAudit`` row.
"""
from __future__ import annotations

import uuid

from django.db import connection, transaction

from memseek_site.errors import ApiError

from ..catalog.runtime import catalog_for_workspace
from ..models import Record, ReviewAudit, Workspace
from ..record_rows import UNREAD_COLUMNS
from ..record_sql import current_in_lane_q, lane_of
from ..write_locks import entity_locks, workspace_lock_shared
from .record_ingest import record_ingest_batch


@transaction.atomic
def draft_approve(*, workspace: Workspace, draft_id: uuid.UUID, actor: str) -> Record:
    """Write the active successor of pending draft ``draft_id`` and return it.

    Raises ``ApiError``: ``record_not_found`` (404; also another workspace's id),
    ``not_a_draft`` (409; an active record, or a withdrawal), ``draft_not_keyed`` (409),
    ``promotion_stale`` (409; a newer draft or withdrawal exists in the draft lane, or the
    active value changed after the draft was written), ``nothing_to_retract`` (409; a
    retraction proposal with no live active value), or any write-side error of
    ``record_ingest_batch`` (e.g. ``422 client_output`` if the catalog changed). Nothing is
    written when it raises.
    """
    draft = _pending_draft(workspace, draft_id, "approved")
    active = _active_head(draft)
    if active is not None and active.seq > draft.seq:
        raise ApiError("promotion_stale", f"The active value of this slot changed after draft {draft.id} was "
                       f"written (now record {active.id}); review the slot again and write a new draft if "
                       "it is still wanted.", path="id", extra={"active_id": str(active.id)})
    parents = [str(draft.id)] + ([str(active.id)] if active is not None else [])
    item = {"entity": draft.entity, "collection": draft.collection, "collection_version": draft.collection_version,
            "type": draft.type, "key": draft.key, "status": "active", "derived_from": parents}
    if draft.tombstone:
        if active is None or active.tombstone:
            raise ApiError("nothing_to_retract", f"Draft {draft.id} proposes retracting the active value of its slot, "
                           "but the slot has no live active value; reject the draft instead.", path="id")
        item["tombstone"] = True
    else:
        scores, annotations = _client_outputs(workspace, draft)
        item.update(text=draft.text, content={k: v for k, v in draft.content.items() if k != "text"},
                    occurred_at=draft.occurred_at.isoformat(), scores=scores, annotations=annotations)
    record = _write(workspace, item, draft, "its active successor")
    ReviewAudit.objects.create(workspace=workspace, action="approve", draft=draft, record=record, actor=actor)
    return record


@transaction.atomic
def draft_reject(*, workspace: Workspace, draft_id: uuid.UUID, actor: str) -> Record:
    """Withdraw pending draft ``draft_id`` with a draft-lane tombstone citing it; return the
    tombstone. The active value is untouched.

    Raises ``ApiError``: ``record_not_found`` (404), ``not_a_draft`` (409),
    ``draft_not_keyed`` (409), ``promotion_stale`` (409; it is no longer the slot's pending
    draft). Nothing is written when it raises.
    """
    draft = _pending_draft(workspace, draft_id, "rejected")
    item = {"entity": draft.entity, "collection": draft.collection, "collection_version": draft.collection_version,
            "type": draft.type, "key": draft.key, "status": "draft", "tombstone": True,
            "derived_from": [str(draft.id)]}
    record = _write(workspace, item, draft, "a withdrawal")
    ReviewAudit.objects.create(workspace=workspace, action="reject", draft=draft, record=record, actor=actor)
    return record


def is_withdrawal(record: Record) -> bool:
    """Whether ``record`` is a draft tombstone citing a draft of its own slot."""
    if not (record.tombstone and record.status == "draft" and record.key is not None and record.derived_from):
        return False
    return Record.objects.filter(lane_of(record), id__in=record.derived_from).exists()


def _pending_draft(workspace: Workspace, draft_id: uuid.UUID, verb: str) -> Record:
    """Load ``draft_id``, check it is a reviewable draft, take the entity lock, and check it is
    still the pending draft of its slot."""
    draft = Record.objects.filter(workspace=workspace, pk=draft_id).defer(*UNREAD_COLUMNS).first()
    if draft is None:
        raise ApiError("record_not_found", f"No record {draft_id} in this workspace.", path="id")
    if draft.status != "draft":
        raise ApiError("not_a_draft", f"Record {draft.id} is {draft.status}, not a draft; only drafts are {verb}.",
                       path="id")
    if draft.key is None:
        raise ApiError("draft_not_keyed", f"Draft {draft.id} has no key; only keyed drafts are reviewed (an event "
                       "draft cannot be checked for staleness or withdrawn). Write the event as active instead.",
                       path="id")
    if is_withdrawal(draft):
        raise ApiError("not_a_draft", f"Record {draft.id} withdraws an earlier draft; it is not a proposal and "
                       f"cannot be {verb}.", path="id")
    _lock_entity(workspace, draft.entity)
    newer = (Record.objects.filter(lane_of(draft), seq__gt=draft.seq)
             .order_by("-seq").values_list("id", flat=True).first())
    if newer is not None:
        raise ApiError("promotion_stale", f"Draft {draft.id} is no longer the pending draft of its slot: record "
                       f"{newer} replaced or withdrew it. Review the slot's current draft instead.", path="id",
                       extra={"current_draft_id": str(newer)})
    return draft


def _lock_entity(workspace: Workspace, entity: str) -> None:
    """The locks ingest takes for a keyed write, in its order (shared workspace lock, then the
    entity lock), so a review and a concurrent write to the same entity serialize and cannot
    deadlock; ingest re-takes them in the same transaction (advisory locks are re-entrant)."""
    with connection.cursor() as cursor:
        workspace_lock_shared(cursor, workspace.pk)
        entity_locks(cursor, workspace.pk, [entity])


def _active_head(draft: Record) -> Record | None:
    return (Record.objects.filter(lane_of(draft, status="active"), current_in_lane_q())
            .only("id", "seq", "tombstone").first())


def _client_outputs(workspace: Workspace, draft: Record) -> tuple[dict, dict]:
    """The draft's outputs of client processors (what a client would resend); server-side
    processors run again on the successor."""
    catalog = catalog_for_workspace(workspace)
    collection = catalog.value("collection", draft.collection, draft.collection_version)
    scores, annotations = {}, {}
    for name in collection.processors if collection is not None else ():
        processor = catalog.value("processor", name)
        if processor is None or processor.source != "client" or not processor.applies_to(draft.type):
            continue
        if processor.kind == "score" and name in draft.scores:
            scores[name] = draft.scores[name]
        elif processor.kind == "json" and name in draft.annotations:
            annotations[name] = draft.annotations[name]
    return scores, annotations


def _write(workspace: Workspace, item: dict, draft: Record, what: str) -> Record:
    try:
        result = record_ingest_batch(workspace=workspace, items=[item])
    except ApiError as error:
        detail = error.detail.removeprefix("records[0]: ")
        raise ApiError(error.code, f"Draft {draft.id} cannot be written as {what}: {detail}", path="id",
                       extra=error.extra) from None
    return Record.objects.defer(*UNREAD_COLUMNS).get(pk=result.inserted[0].id)
