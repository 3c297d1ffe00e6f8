"""Reads behind the operator console's record browser, record page and definitions list.

Invariants: every query is scoped to one workspace first, so another workspace's record looks
missing (404); filters only narrow; a list page is keyset-paginated by ``seq`` and costs one
query whatever the table size (no COUNT, no OFFSET over records); every read is bounded
(children, slot versions and embeddings by a LIMIT); the raw vector and the large generated
columns are never read.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from django.db.models import F, Func, IntegerField

from ..models import Definition, Record, RecordEmbedding, ReviewAudit, Workspace
from ..record_rows import UNREAD_COLUMNS
from ..record_sql import lane_of

LIST_COLUMNS = ("id", "seq", "entity", "collection", "collection_version", "type", "key", "status", "text",
                "tombstone", "enriched_at", "occurred_at", "created_at")
CHILDREN_SHOWN = 50
CHAIN_SIDE = 12


@dataclass(frozen=True, slots=True)
class RecordFilters:
    """Record browser filters; ``None`` means "not filtered". ``ready`` is True (ready), False
    (pending enrichment) or None."""

    collection: str | None = None
    entity: str | None = None
    type: str | None = None
    key: str | None = None
    status: str | None = None
    ready: bool | None = None
    occurred_after: datetime | None = None
    occurred_before: datetime | None = None


@dataclass(frozen=True, slots=True)
class RecordPage:
    """One page, newest first. ``newer_than`` / ``older_than`` are the ``after_seq`` /
    ``before_seq`` cursors of the neighbouring pages, ``None`` when there is none."""

    records: list[Record]
    newer_than: int | None
    older_than: int | None


def record_page(*, workspace: Workspace, filters: RecordFilters, per_page: int, before_seq: int | None = None,
                after_seq: int | None = None) -> RecordPage:
    """One keyset page of the workspace's records matching ``filters``, newest first by ``seq``.

    ``before_seq`` pages towards older records, ``after_seq`` towards newer ones (the page just
    above the cursor); with neither, the newest page. One query of ``per_page + 1`` rows.
    """
    rows = _filtered(Record.objects.filter(workspace=workspace), filters).only(*LIST_COLUMNS)
    if after_seq is not None:
        fetched = list(rows.filter(seq__gt=after_seq).order_by("seq")[: per_page + 1])
        more_newer = len(fetched) > per_page
        records = fetched[:per_page][::-1]
        return RecordPage(records, records[0].seq if more_newer else None,
                          records[-1].seq if records else None)
    if before_seq is not None:
        rows = rows.filter(seq__lt=before_seq)
    fetched = list(rows.order_by("-seq")[: per_page + 1])
    records = fetched[:per_page]
    more_older = len(fetched) > per_page
    newer = records[0].seq if (before_seq is not None and records) else None
    return RecordPage(records, newer, records[-1].seq if more_older else None)


def _filtered(rows, filters: RecordFilters):
    exact = {"collection": filters.collection, "entity": filters.entity, "type": filters.type, "key": filters.key,
             "status": filters.status}
    rows = rows.filter(**{column: value for column, value in exact.items() if value is not None})
    if filters.ready is not None:
        rows = rows.filter(enriched_at__isnull=not filters.ready)
    if filters.occurred_after is not None:
        rows = rows.filter(occurred_at__gte=filters.occurred_after)
    if filters.occurred_before is not None:
        rows = rows.filter(occurred_at__lt=filters.occurred_before)
    return rows


def record_detail(*, workspace: Workspace, record_id: uuid.UUID) -> dict | None:
    """Everything the record page shows, or ``None`` when ``workspace`` has no such record.

    Returns ``{record, parents, missing_parents, children, children_more, chain, chain_newer_more,
    chain_older_more, embeddings, reviews}``: parents are the ``derived_from`` rows (in citation
    order; ids not found are listed in ``missing_parents``), children the newest
    ``CHILDREN_SHOWN`` rows citing it, ``chain`` up to ``CHAIN_SIDE`` versions either side of it
    in its (entity, collection, key, status) lane, newest first (empty for an unkeyed record),
    ``embeddings`` ``[{space, dimension, created_at}]``, ``reviews`` the review audit rows where
    it was the draft or the written record.
    """
    record = Record.objects.filter(workspace=workspace, pk=record_id).defer(*UNREAD_COLUMNS).first()
    if record is None:
        return None
    found = {row.id: row for row in Record.objects.filter(workspace=workspace, id__in=record.derived_from)
             .only(*LIST_COLUMNS)} if record.derived_from else {}
    children = list(Record.objects.filter(workspace=workspace, derived_from__contains=[record.id])
                    .only(*LIST_COLUMNS).order_by("-seq")[: CHILDREN_SHOWN + 1])
    chain, newer_more, older_more = _chain(record)
    embeddings = list(RecordEmbedding.objects.filter(record=record)
                      .annotate(dimension=Func(F("embedding"), function="vector_dims", output_field=IntegerField()))
                      .order_by("space").values("space", "dimension", "created_at")[:20])
    reviews = list(ReviewAudit.objects.filter(workspace=workspace, draft=record)
                   | ReviewAudit.objects.filter(workspace=workspace, record=record))
    return {
        "record": record,
        "parents": [found[parent] for parent in record.derived_from if parent in found],
        "missing_parents": [parent for parent in record.derived_from if parent not in found],
        "children": children[:CHILDREN_SHOWN],
        "children_more": len(children) > CHILDREN_SHOWN,
        "chain": chain,
        "chain_newer_more": newer_more,
        "chain_older_more": older_more,
        "embeddings": embeddings,
        "reviews": reviews[:20],
    }


def _chain(record: Record) -> tuple[list[Record], bool, bool]:
    """The versions of the record's lane around it (two indexed queries on the keyed-lane index)."""
    if record.key is None:
        return [], False, False
    lane = Record.objects.filter(lane_of(record)).only(*LIST_COLUMNS)
    newer = list(lane.filter(seq__gt=record.seq).order_by("seq")[: CHAIN_SIDE + 1])
    older = list(lane.filter(seq__lte=record.seq).order_by("-seq")[: CHAIN_SIDE + 2])
    return newer[:CHAIN_SIDE][::-1] + older[: CHAIN_SIDE + 1], len(newer) > CHAIN_SIDE, len(older) > CHAIN_SIDE + 1


def definitions_for_console(*, workspace: Workspace):
    """The workspace's collection and view versions, by family, name, newest version first (a
    queryset for a paginator; the YAML source is not read)."""
    return (Definition.objects.filter(workspace=workspace, family__in=("collection", "view"))
            .defer("source_text").order_by("family", "name", "-version"))


def definition_summary(definition: Definition) -> dict:
    """List columns of one definition: ``kind`` (a view's kind, a collection's mode) and the
    collections a view reads."""
    body = definition.body
    if definition.family == "view":
        return {"kind": body.get("kind") or "search", "reads": list(body.get("collections") or [])}
    return {"kind": body.get("mode") or "", "reads": []}

