"""Reads over records and the compiled catalog: ``<thing>_get`` / ``<thing>_list``.

Invariants: every query is scoped to one workspace first, so another workspace's rows are
indistinguishable from missing ones; filters only narrow; every payload is plain JSON-ready
data (UUIDs and datetimes as strings, datetimes ISO 8601 with their offset); the raw embedding
vector is never read. Paged reads stop early and say ``truncated`` rather than exceed
``MAX_RESPONSE_BYTES``; ``document_get`` refuses with ``409 document_too_large`` rather than
return a partial document.
"""
from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime

from django.utils import timezone

from memseek_site.conf import memseek_setting
from memseek_site.errors import ApiError

from .catalog.runtime import catalog_for_workspace
from .embedding_serving import serving_config
from .models import Record, RecordEmbedding, Workspace
from .record_sql import before_public_seq_q, current_in_lane_q
from .services.record_touch import records_touch
from .text import truncate_middle

SYSTEM_COLLECTION = "_system"
TIMELINE_TEXT_CHARS = 500

# Never needed by a read payload; the stored tsvector can be large.
_UNREAD_COLUMNS = ("search_vector",)
# A placeholder wide enough for any seq, so a page's envelope is never under-counted.
_WIDEST_SEQ = 10**19


def json_bytes(value) -> int:
    """The UTF-8 size of ``value`` as DRF's JSONRenderer writes it (compact, non-ASCII kept,
    U+2028/U+2029 escaped to six characters)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return len(text.encode("utf-8")) + 3 * (text.count("\u2028") + text.count("\u2029"))


# annotation_meta members that audit a result rather than describe how enrichment went.
_AUDIT_KEYS = ("config_hash", "output_hash", "source")


def record_get(*, workspace: Workspace, record_id: uuid.UUID) -> dict:
    """Return the full dereference of one record of ``workspace`` (everything but the vector).

    When ``TOUCH_ON_READ`` is true, the record is touched first (``records_touch``) and the
    payload shows the new ``last_accessed``. Raises ``ApiError('record_not_found')`` for a
    missing id and for another workspace's id alike.
    """
    record = Record.objects.filter(workspace=workspace, pk=record_id).defer(*_UNREAD_COLUMNS).first()
    if record is None:
        raise ApiError("record_not_found", f"No record {record_id} in this workspace.", path="id")
    if memseek_setting("TOUCH_ON_READ"):
        now = timezone.now()
        records_touch(record_ids=[record.pk], now=now)
        record.last_accessed = now
    return record_payload(workspace=workspace, record=record)


def records_by_id(*, workspace: Workspace, record_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, dict]:
    """The ``record_get`` payloads of those of ``record_ids`` that are records of ``workspace``
    (another workspace's ids are simply absent), without touching them."""
    rows = list(Record.objects.filter(workspace=workspace, pk__in=list(record_ids)).defer(*_UNREAD_COLUMNS))
    spaces: dict[uuid.UUID, list[str]] = {record.pk: [] for record in rows}
    for record_id, space in (RecordEmbedding.objects.filter(record_id__in=list(spaces))
                             .order_by("-created_at", "-id").values_list("record_id", "space")):
        spaces[record_id].append(space)
    return {record.pk: record_payload(workspace=workspace, record=record, spaces=spaces[record.pk]) for record in rows}


def record_payload(*, workspace: Workspace, record: Record, spaces: list[str] | None = None) -> dict:
    """The full dereference of ``record`` as ``GET /records/{id}`` returns it; ``spaces`` (its
    vectors' spaces, newest first) is read when not given."""
    return {
        "id": str(record.id),
        "seq": record.workspace_seq,
        "collection": record.collection,
        "collection_version": record.collection_version,
        "collection_hash": record.collection_hash,
        "entity": record.entity,
        "key": record.key,
        "type": record.type,
        "status": record.status,
        "content": record.content,
        "tombstone": record.tombstone,
        "embedding_space": _embedding_space(workspace, record, spaces),
        "scores": record.scores,
        "annotations": record.annotations,
        "annotation_meta": record.annotation_meta,
        "enrichment_meta": _enrichment_meta(record),
        "enrichment_error": record.enrichment_error,
        "ready": record.ready,
        "enriched_at": _iso(record.enriched_at),
        "run_id": _str_or_none(record.run_id),
        "depth": record.depth,
        "derived_from": [str(parent) for parent in record.derived_from],
        "dedupe_key": record.dedupe_key,
        "occurred_at": _iso(record.occurred_at),
        "created_at": _iso(record.created_at),
        "last_accessed": _iso(record.last_accessed),
    }


def timeline_list(*, workspace: Workspace, entity: str, collections: Sequence[str] | None,
                  types: Sequence[str] | None, status: str, limit: int, before_seq: int | None,
                  include_system: bool) -> dict:
    """Return one page of an entity's records, newest first by ``seq``, as compact rows.

    ``status`` is ``active``, ``draft`` or ``all``; ``_system`` rows appear only with
    ``include_system``. Keyed successors are not collapsed; unready rows and tombstones are
    included. Returns ``{records, next_before_seq, truncated}``.
    """
    rows = Record.objects.filter(workspace=workspace, entity=entity)
    if not include_system:
        rows = rows.exclude(collection=SYSTEM_COLLECTION)
    if collections:
        rows = rows.filter(collection__in=collections)
    if types:
        rows = rows.filter(type__in=types)
    if status != "all":
        rows = rows.filter(status=status)
    if before_seq is not None:
        rows = rows.filter(before_public_seq_q(workspace_id=workspace.pk, before=before_seq))
    fetched = list(rows.order_by("-seq").only(
        "id", "seq", "workspace_seq", "collection", "key", "type", "status", "enriched_at", "tombstone", "run_id",
        "text", "occurred_at", "created_at")[: limit + 1])
    return _bounded_page(fetched, limit=limit, items_key="records", serialize=_timeline_row)


def document_get(*, workspace: Workspace, entity: str, collections: Sequence[str] | None, status: str) -> dict:
    """Return the current keyed state of ``entity`` in the ``status`` lane.

    For each ``(collection, key)`` the newest row by ``seq`` wins, ready or not (a newer unready
    value hides an older one). Current tombstones are listed under ``retractions`` instead of
    ``beliefs``. Beliefs are ordered by (collection, key). Raises
    ``ApiError('document_too_large')`` when beliefs plus retractions exceed
    ``MAX_DOCUMENT_RECORDS`` or the payload exceeds ``MAX_RESPONSE_BYTES``.
    """
    max_records = memseek_setting("MAX_DOCUMENT_RECORDS")
    rows = (Record.objects.filter(workspace=workspace, entity=entity, status=status, key__isnull=False)
            .exclude(collection=SYSTEM_COLLECTION))
    if collections:
        rows = rows.filter(collection__in=collections)
    heads = list(rows.filter(current_in_lane_q()).order_by("collection", "key")
                 .defer("content", "scores", "annotations", "annotation_meta", *_UNREAD_COLUMNS)[: max_records + 1])
    if len(heads) > max_records:
        raise ApiError("document_too_large",
                       f"The document of {entity!r} holds more than {max_records} current records "
                       "(MAX_DOCUMENT_RECORDS); narrow it with collections=.")
    # Python's code-point order, so the order does not depend on the database collation.
    heads.sort(key=lambda record: (record.collection, record.key))
    payload = {
        "entity": entity,
        "status": status,
        "beliefs": [_belief(record) for record in heads if not record.tombstone],
        "retractions": [{"collection": record.collection, "key": record.key, "id": str(record.id),
                         "seq": record.workspace_seq} for record in heads if record.tombstone],
        "freshness": [],
    }
    limit_bytes = memseek_setting("MAX_RESPONSE_BYTES")
    if json_bytes(payload) > limit_bytes:
        raise ApiError("document_too_large",
                       f"The document of {entity!r} is larger than {limit_bytes} bytes (MAX_RESPONSE_BYTES); "
                       "narrow it with collections=.")
    return payload


def document_history_list(*, workspace: Workspace, entity: str, collection: str, key: str, limit: int,
                          before_seq: int | None) -> dict:
    """Return one page of every version of one keyed slot, newest first by ``seq``: both
    lanes (active and draft), unready rows and tombstones. Returns
    ``{versions, next_before_seq, truncated}``."""
    rows = Record.objects.filter(workspace=workspace, entity=entity, collection=collection, key=key)
    if before_seq is not None:
        rows = rows.filter(before_public_seq_q(workspace_id=workspace.pk, before=before_seq))
    fetched = list(rows.order_by("-seq").defer("content", "scores", "annotations", "annotation_meta",
                                                *_UNREAD_COLUMNS)[: limit + 1])
    return _bounded_page(fetched, limit=limit, items_key="versions", serialize=_version)


def collection_list(*, workspace: Workspace) -> dict:
    """Return every loaded collection version of the workspace's catalog, sorted by name then
    version, as ``{collections: [...]}``. The effective search profile equals the declared one
    until deployment overrides exist."""
    catalog = catalog_for_workspace(workspace)
    return {"collections": [_collection(definition) for definition in catalog.all("collection")]}


def _bounded_page(rows: list[Record], *, limit: int, items_key: str, serialize: Callable[[Record], dict]) -> dict:
    """Serialise up to ``limit`` of ``rows`` (fetched with one extra row to detect a further page)
    while the response stays within ``MAX_RESPONSE_BYTES``."""
    envelope = {items_key: [], "next_before_seq": _WIDEST_SEQ, "truncated": False}
    budget = memseek_setting("MAX_RESPONSE_BYTES") - json_bytes(envelope)
    items: list[dict] = []
    last_seq = None
    for record in rows[:limit]:
        item = serialize(record)
        size = json_bytes(item) + (1 if items else 0)  # the separating comma
        if size > budget:
            break
        budget -= size
        items.append(item)
        last_seq = record.workspace_seq
    more = len(items) < len(rows)
    if more and not items:
        raise ApiError("response_too_large",
                       f"A single row is larger than the response bound MAX_RESPONSE_BYTES "
                       f"({memseek_setting('MAX_RESPONSE_BYTES')} bytes).")
    return {items_key: items, "next_before_seq": last_seq if more else None, "truncated": more}


def _timeline_row(record: Record) -> dict:
    return {
        "id": str(record.id),
        "seq": record.workspace_seq,
        "collection": record.collection,
        "key": record.key,
        "type": record.type,
        "status": record.status,
        "ready": record.ready,
        "tombstone": record.tombstone,
        "run_id": _str_or_none(record.run_id),
        "text": truncate_middle(record.text, TIMELINE_TEXT_CHARS),
        "occurred_at": _iso(record.occurred_at),
        "created_at": _iso(record.created_at),
    }


def _belief(record: Record) -> dict:
    return {
        "collection": record.collection,
        "collection_version": record.collection_version,
        "collection_hash": record.collection_hash,
        "key": record.key,
        "type": record.type,
        "text": record.text,
        "id": str(record.id),
        "run_id": _str_or_none(record.run_id),
        "citations": _citations(record),
        "status": record.status,
        "depth": record.depth,
        "ready": record.ready,
        "enrichment_error": record.enrichment_error,
        "occurred_at": _iso(record.occurred_at),
        "created_at": _iso(record.created_at),
    }


def _version(record: Record) -> dict:
    return {
        "id": str(record.id),
        "seq": record.workspace_seq,
        "collection": record.collection,
        "collection_version": record.collection_version,
        "collection_hash": record.collection_hash,
        "key": record.key,
        "type": record.type,
        "status": record.status,
        "text": record.text,
        "tombstone": record.tombstone,
        "ready": record.ready,
        "enrichment_error": record.enrichment_error,
        "run_id": _str_or_none(record.run_id),
        "citations": _citations(record),
        "depth": record.depth,
        "occurred_at": _iso(record.occurred_at),
        "created_at": _iso(record.created_at),
    }


def _collection(definition) -> dict:
    collection = definition.value
    return {
        "name": collection.name,
        "version": collection.version,
        "hash": definition.hash,
        "contract_hash": collection.contract_hash,
        "active": definition.active,
        "mode": collection.mode,
        "schema": definition.body["schema"],
        "text_projection": collection.text_projection,
        "fields": {
            name: {"path": ".".join(field.path), "type": [field.type] if field.is_array else field.type,
                   "filter": field.filter, "sort": field.sort, "project": field.project}
            for name, field in collection.fields.items()
        },
        "required_processors": list(collection.required_processors),
        "optional_processors": list(collection.optional_processors),
        "search_profile": collection.search_profile,
        "declared_search_profile": collection.search_profile,
        "allowed_search_profiles": list(collection.allowed_search_profiles),
    }


def _embedding_space(workspace: Workspace, record: Record, spaces: list[str] | None) -> str | None:
    """The space of the record's vector: the catalog's active space when the record has a vector
    there, otherwise its newest vector's space, otherwise None."""
    if spaces is None:
        spaces = list(RecordEmbedding.objects.filter(record=record).order_by("-created_at", "-id")
                      .values_list("space", flat=True))
    if not spaces:
        return None
    models_conf = catalog_for_workspace(workspace).value("models", "models")
    active = serving_config(workspace.pk, models_conf.embedding).space if models_conf is not None else None
    return active if active in spaces else spaces[0]


def _enrichment_meta(record: Record) -> dict:
    """The worker's diagnostics per processor it ran (outcome status, when, and the model or
    embedding space): ``annotation_meta`` without client entries and without the audit hashes.
    ``{}`` for a record the worker had nothing to do for."""
    return {name: {key: value for key, value in meta.items() if key not in _AUDIT_KEYS}
            for name, meta in record.annotation_meta.items() if meta.get("source") != "client"}


def _citations(record: Record) -> list[str]:
    """``derived_from`` minus the row's own run: the evidence it cites."""
    return [str(parent) for parent in record.derived_from if parent != record.run_id]


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _str_or_none(value) -> str | None:
    return str(value) if value is not None else None
