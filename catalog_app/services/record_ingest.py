"""``POST /records``: an atomic batch write.

Invariants: the batch is all or nothing (any failing item rolls back every row, and the error
names ``records[i]``); content is never updated; a record is ready at insert only when no
required processor is left to run (tombstones and client-only contracts), otherwise
enrichment is enqueued after commit. Order of work follows the reference: per-item
preparation → shared workspace lock → entity locks for keyed items (sorted) → parents and
lineage → dedupe → insert → storage quota (``storage_quota``) → lexical index
(``catalog_app.lexical``), in the same transaction.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.db import connection, transaction
from django.utils import timezone
from psycopg.types.json import Jsonb

from memseek_site.conf import memseek_setting
from memseek_site.errors import ApiError
from memseek_site.parsing import fail

from ..binary_rows import binary_rows
from ..catalog.runtime import catalog_for_workspace
from ..lexical.maintenance import lexical_records_changed
from ..models import Workspace
from ..record_sql import RECORD, current_in_lane
from .record_input import PreparedRecord, prepare_record
from ..write_locks import entity_locks, workspace_lock_shared
from .storage_quota import storage_quota_check

@dataclass(frozen=True, slots=True)
class IngestOutcome:
    index: int
    id: uuid.UUID
    ready: bool


@dataclass(frozen=True, slots=True)
class IngestResult:
    inserted: tuple[IngestOutcome, ...]
    duplicates: tuple[IngestOutcome, ...]


@dataclass(frozen=True, slots=True)
class _Parent:
    id: uuid.UUID
    seq: int
    depth: int
    lane: tuple


def record_ingest_batch(*, workspace: Workspace, items) -> IngestResult:
    """Validate and write ``items`` (the ``records`` list of the request) into ``workspace``.

    Returns what was inserted and which items were idempotent duplicates. Raises ``ApiError``;
    nothing is written then.
    """
    if not isinstance(items, list) or not items:
        raise fail("records", "must be a non-empty list of records")
    if len(items) > memseek_setting("MAX_BATCH"):
        raise fail("records", f"{len(items)} records; a batch holds at most {memseek_setting('MAX_BATCH')}",
                   "batch_too_large")
    catalog = catalog_for_workspace(workspace)
    if not catalog.names("collection"):
        raise ApiError("no_catalog", "This workspace has no collections yet; load a catalog with "
                                     "`python manage.py load_catalog DIR --workspace NAME`.")
    now = timezone.now()
    processor_hashes = {d.name: d.hash for d in catalog.all("processor") if d.active}
    prepared = []
    for index, raw in enumerate(items):
        try:
            prepared.append(prepare_record(raw, catalog, processor_hashes, now))
        except ApiError as error:
            raise error.prefixed(f"records[{index}]", f"records[{index}]") from None
    with transaction.atomic():
        _lock(workspace, prepared)
        depths = _depths(workspace, prepared)
        to_insert, duplicates, repeats = _dedupe(workspace, prepared)
        inserted, raced = _insert(workspace, [(index, prepared[index], depths[index]) for index in to_insert])
        if inserted:
            storage_quota_check(workspace=workspace)
        # Under the entity locks taken above: a write is searchable when (and only if) it commits.
        lexical_records_changed(record_ids=[outcome.id for outcome in inserted], inserted=True)
        duplicates += raced
        by_index = {outcome.index: outcome for outcome in inserted + duplicates}
        duplicates += [IngestOutcome(index, by_index[first].id, by_index[first].ready) for index, first in repeats]
        duplicates.sort(key=lambda outcome: outcome.index)
        pending = [outcome.id for outcome in inserted if prepared[outcome.index].pending_processors]
        if pending:
            from ..tasks import enqueue_enrichment

            enqueue_enrichment(pending)
    return IngestResult(tuple(inserted), tuple(duplicates))


def _lock(workspace: Workspace, prepared: list[PreparedRecord]) -> None:
    """The write locks (``catalog_app.write_locks``) of the batch's workspace and keyed entities."""
    with connection.cursor() as cursor:
        workspace_lock_shared(cursor, workspace.pk)
        entity_locks(cursor, workspace.pk, (record.entity for record in prepared if record.key is not None))


def _depths(workspace: Workspace, prepared: list[PreparedRecord]) -> list[int]:
    wanted = {parent for record in prepared for parent in record.derived_from}
    if not wanted:
        return [0] * len(prepared)
    parents = _load_parents(workspace, wanted)
    _check_lineage(workspace, parents)
    limit = memseek_setting("MAX_DERIVATION_DEPTH")
    heads = _heads(workspace, parents)
    depths = []
    for index, record in enumerate(prepared):
        lane = (record.entity, record.collection, record.key, record.status)
        # A newer value earlier in this batch replaces the stored head of its lane.
        lane_rewritten = record.key is not None and any(
            (other.entity, other.collection, other.key, other.status) == lane for other in prepared[:index])
        depth = 0
        for position, parent_id in enumerate(record.derived_from):
            parent = parents.get(parent_id)
            if parent is None:
                raise _item_error(index, f"derived_from[{position}]", f"no record {parent_id} in this workspace",
                                  "parent_not_found")
            continuity = record.key is not None and parent.lane == lane and parent.id in heads \
                and not lane_rewritten
            depth = max(depth, parent.depth if continuity else parent.depth + 1)
        if depth > limit:
            raise _item_error(index, "derived_from", f"the record would have depth {depth}; "
                              f"MAX_DERIVATION_DEPTH is {limit}", "depth_limit")
        depths.append(depth)
    return depths


def _load_parents(workspace: Workspace, wanted: set[uuid.UUID]) -> dict[uuid.UUID, _Parent]:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, seq, depth, entity, collection, key, status FROM {RECORD} "
            "WHERE workspace_id = %s AND id = ANY(%s::uuid[])", [workspace.pk, list(wanted)])
        return {row[0]: _Parent(row[0], row[1], row[2], (row[3], row[4], row[5], row[6]))
                for row in cursor.fetchall()}


def _heads(workspace: Workspace, parents: dict[uuid.UUID, _Parent]) -> set[uuid.UUID]:
    """The parents that are still the newest row of their keyed lane."""
    keyed = [parent for parent in parents.values() if parent.lane[2] is not None]
    if not keyed:
        return set()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT p.id FROM {RECORD} p WHERE p.id = ANY(%s::uuid[]) AND {current_in_lane('p').sql}",
                       [[parent.id for parent in keyed]])
        return {row[0] for row in cursor.fetchall()}


def _check_lineage(workspace: Workspace, parents: dict[uuid.UUID, _Parent]) -> None:
    """Refuse to extend a lineage that is not order-preserving (every parent older than its
    child); such a lineage is how a cycle would show. The walk visits each row once."""
    with connection.cursor() as cursor:
        cursor.execute(
            "WITH RECURSIVE lineage(id, seq, derived_from) AS ("
            f" SELECT id, seq, derived_from FROM {RECORD} WHERE id = ANY(%s::uuid[])"
            " UNION"
            " SELECT r.id, r.seq, r.derived_from FROM lineage l"
            f" JOIN {RECORD} r ON r.id = ANY(l.derived_from) AND r.workspace_id = %s)"
            f" SELECT l.id FROM lineage l JOIN {RECORD} r ON r.id = ANY(l.derived_from)"
            " WHERE r.seq >= l.seq LIMIT 1",
            [list(parents), workspace.pk])
        broken = cursor.fetchone()
    if broken is not None:
        raise fail("records", f"the lineage of a parent is cyclic or out of order at record {broken[0]}",
                   "parent_cycle")


def _stored_dedupe(workspace: Workspace, keys) -> dict[str, tuple]:
    if not keys:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT dedupe_key, id, dedupe_hash, enriched_at IS NOT NULL FROM {RECORD} "
            "WHERE workspace_id = %s AND dedupe_key = ANY(%s)", [workspace.pk, list(keys)])
        return {row[0]: row[1:] for row in cursor.fetchall()}


def _dedupe(workspace: Workspace, prepared: list[PreparedRecord]):
    """Split the batch into rows to insert, duplicates of stored rows, and repeats of an
    earlier item of this batch (``(index, first_index)``); a reused key with a different
    payload is a ``dedupe_conflict``."""
    stored = _stored_dedupe(workspace, {record.dedupe_key for record in prepared if record.dedupe_key is not None})
    to_insert, duplicates, repeats, first_in_batch = [], [], [], {}
    for index, record in enumerate(prepared):
        key = record.dedupe_key
        if key is None:
            to_insert.append(index)
            continue
        if key in stored:
            record_id, dedupe_hash, ready = stored[key]
            if dedupe_hash != record.dedupe_hash:
                raise _conflict(index, key)
            duplicates.append(IngestOutcome(index, record_id, ready))
        elif key in first_in_batch:
            if prepared[first_in_batch[key]].dedupe_hash != record.dedupe_hash:
                raise _conflict(index, key)
            repeats.append((index, first_in_batch[key]))
        else:
            first_in_batch[key] = index
            to_insert.append(index)
    return to_insert, duplicates, repeats


def _item_error(index: int, path: str, message: str, code: str) -> ApiError:
    return fail(path, message, code).prefixed(f"records[{index}]", f"records[{index}]")


def _conflict(index: int, key: str) -> ApiError:
    return _item_error(index, "dedupe_key", f"{key!r} was already used for a different record; use a new key or "
                       "resend the identical record", "dedupe_conflict")


# The rows travel as one jsonb array of objects that jsonb_to_recordset turns back into typed
# columns: the statement text is the same for every batch size (psycopg converts it once) and
# the values are serialised by json's C encoder in one call (psycopg quotes each element of an
# array parameter in Python, so one array per column is no cheaper than one placeholder per
# value). ``ORDER BY n`` has the seq trigger number the rows in batch order.
_ROW_TYPES = (("id", "uuid"), ("collection", "text"), ("collection_version", "integer"),
              ("collection_hash", "text"), ("entity", "text"), ("type", "text"), ("key", "text"),
              ("status", "text"), ("text", "text"), ("content", "jsonb"), ("scores", "jsonb"),
              ("annotations", "jsonb"), ("annotation_meta", "jsonb"), ("depth", "integer"),
              ("derived_from", "uuid[]"), ("dedupe_key", "text"), ("dedupe_hash", "text"),
              ("occurred_at", "timestamptz"), ("ready", "boolean"), ("tombstone", "boolean"),
              ("bm25_tf", "jsonb"), ("bm25_length", "integer"), ("en_tf", "jsonb"), ("en_length", "integer"),
              # Only an import (``workspace_import``) carries these; a write leaves them out (NULL).
              ("created_at", "timestamptz"), ("last_accessed", "timestamptz"), ("enriched_at", "timestamptz"),
              ("access_count", "integer"), ("run_id", "uuid"), ("enrichment_error", "jsonb"))
_COMPUTED = {"workspace_id": "%s", "occurred_at": "COALESCE(u.occurred_at, now())",
             "created_at": "COALESCE(u.created_at, now())", "last_accessed": "COALESCE(u.last_accessed, now())",
             "enriched_at": "CASE WHEN u.ready THEN COALESCE(u.enriched_at, now()) END",
             "access_count": "COALESCE(u.access_count, 0)"}
_COLUMNS = ("id", "workspace_id", "collection", "collection_version", "collection_hash", "entity", "type", "key",
            "status", "text", "content", "scores", "annotations", "annotation_meta", "depth", "derived_from",
            "dedupe_key", "dedupe_hash", "occurred_at", "created_at", "last_accessed", "enriched_at", "tombstone",
            "bm25_tf", "bm25_length", "en_tf", "en_length", "access_count", "run_id", "enrichment_error")
_INSERT = (f"INSERT INTO {RECORD} ({', '.join(_COLUMNS)}) "
           f"SELECT {', '.join(_COMPUTED.get(column, f'u.{column}') for column in _COLUMNS)} "
           f"FROM ROWS FROM (jsonb_to_recordset(%s) AS ({', '.join(f'{name} {kind}' for name, kind in _ROW_TYPES)})) "
           f"WITH ORDINALITY AS u({', '.join(name for name, _ in _ROW_TYPES)}, n) ORDER BY u.n "
           "ON CONFLICT (workspace_id, dedupe_key) WHERE dedupe_key IS NOT NULL DO NOTHING RETURNING id")


def _row_json(record_id: uuid.UUID, record: PreparedRecord, depth: int) -> dict:
    """One row as ``_ROW_TYPES`` reads it. Parents are stored sorted, as dedupe compares them;
    the prepared record keeps the client's order so that a parent error names the client's
    index."""
    return {"id": str(record_id), "collection": record.collection, "collection_version": record.collection_version,
            "collection_hash": record.collection_hash, "entity": record.entity, "type": record.type,
            "key": record.key, "status": record.status, "text": record.text, "content": record.content,
            "scores": record.scores, "annotations": record.annotations, "annotation_meta": record.annotation_meta,
            "depth": depth, "derived_from": [str(parent) for parent in sorted(record.derived_from)],
            "dedupe_key": record.dedupe_key, "dedupe_hash": record.dedupe_hash,
            "occurred_at": record.occurred_at.isoformat() if record.occurred_at is not None else None,
            "ready": record.ready_at_insert, "tombstone": record.tombstone, "bm25_tf": record.bm25_tf,
            "bm25_length": record.bm25_length, "en_tf": record.en_tf, "en_length": record.en_length}


def records_insert_rows(*, workspace: Workspace, rows: list[dict]) -> set[uuid.UUID]:
    """The one INSERT of record rows: ``rows`` are objects with the ``_ROW_TYPES`` keys (a key left
    out is NULL, which the computed columns default), inserted in list order so the seq trigger
    numbers them in that order. Returns the ids written; a row whose dedupe key the workspace
    already holds is skipped. Takes no locks and does not index: the caller does both."""
    # Bound server-side (binary_rows): the batch's JSON travels as a parameter, not as a string
    # literal the client escapes and the server scans again.
    return {row[0] for row in binary_rows(_INSERT, [workspace.pk, Jsonb(rows)])}


def _insert(workspace: Workspace, rows: list[tuple[int, PreparedRecord, int]]):
    """Insert ``rows``; returns the inserted outcomes and the duplicates found only at insert
    time (a concurrent batch committed the same dedupe key after our check)."""
    if not rows:
        return [], []
    ids = [uuid.uuid4() for _ in rows]
    written = records_insert_rows(workspace=workspace, rows=[
        _row_json(record_id, record, depth) for record_id, (_, record, depth) in zip(ids, rows)])
    inserted, raced = [], []
    for (index, record, _), record_id in zip(rows, ids):
        if record_id in written:
            inserted.append(IngestOutcome(index, record_id, record.ready_at_insert))
            continue
        stored_id, dedupe_hash, ready = _stored_dedupe(workspace, {record.dedupe_key})[record.dedupe_key]
        if dedupe_hash != record.dedupe_hash:
            raise _conflict(index, record.dedupe_key)
        raced.append(IngestOutcome(index, stored_id, ready))
    return inserted, raced
