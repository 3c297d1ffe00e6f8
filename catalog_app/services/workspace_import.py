"""Importing an export (``import_lines``) into a workspace (docs/export-import.md).

Invariants: one import is one transaction under the workspace's exclusive write lock, so it
is all or nothing and no write interleaves with it. It is idempotent: a definition or record the
workspace already holds identically is left as it is, one that differs is a conflict naming its
line, so importing the same export twice changes nothing. Rows are written by the homes every
write uses: definitions as ``catalog_load`` stores them, records by ``records_insert_rows``
(the seq trigger numbers them, in export order), the lexical index by
``lexical_records_changed`` in the same transaction, vectors by ``embeddings_insert``.
Ids are kept (``ids="preserve"``) or mapped to ``import_record_id`` (``"remap"``, a UUIDv5 of
the workspace and the exported id, so a second import maps alike); workspace seqs are kept
(``seqs="preserve"``, gaps included) or numbered on from the workspace's last (``"renumber"``).
"""
from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from django.db import connection, transaction
from django.db.models import F

from memseek_site.conf import memseek_setting
from memseek_site.errors import ApiError
from memseek_site.parsing import fail

from ..bm25_terms import term_frequencies
from ..en_terms import en_term_frequencies
from ..catalog.registry import FAMILIES
from ..catalog.hashing import definition_hash, vector_text_and_hash
from ..catalog.runtime import catalog_for_workspace
from ..lexical.maintenance import lexical_records_changed
from ..models import Definition, Workspace, WorkspaceRecordCounter
from ..record_sql import EMBEDDING, RECORD
from .content_validation import first_field_type_error, first_schema_error, schema_check
from .embedding_index import embedding_space_ensure_index, embeddings_insert
from .import_lines import ImportDefinition, ImportDocument, ImportRecord, line_error
from ..write_locks import workspace_lock_exclusive
from .record_ingest import records_insert_rows

ID_CHOICES = ("preserve", "remap")
SEQ_CHOICES = ("preserve", "renumber")
_REMAP_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "memseek:import")
_CHUNK = 500
# What makes a stored record the same as an imported one: its content and identity, not what
# reads and enrichment change afterwards (scores, annotations, access).
_SAME = ("collection", "collection_version", "collection_hash", "entity", "type", "key", "status", "text",
         "content", "tombstone", "dedupe_key", "occurred_at")


@dataclass(frozen=True, slots=True)
class ImportResult:
    definitions_added: int
    definitions_unchanged: int
    records_added: int
    records_unchanged: int
    vectors_added: int


def import_record_id(workspace_id: int, exported: uuid.UUID, ids: str) -> uuid.UUID:
    """The id the record exported as ``exported`` has in workspace ``workspace_id``."""
    return exported if ids == "preserve" else uuid.uuid5(_REMAP_NAMESPACE, f"{workspace_id}:{exported}")


def workspace_import(*, workspace: Workspace, document: ImportDocument, ids: str = "preserve",
                     seqs: str = "preserve", progress: Callable[[int], object] = lambda written: None) -> ImportResult:
    """Write ``document`` into ``workspace``; raises ``ApiError`` (nothing is written then).
    ``progress`` is called with the count of each chunk of records written (not yet committed)."""
    with transaction.atomic():
        workspace = Workspace.objects.select_for_update().get(pk=workspace.pk)
        with connection.cursor() as cursor:
            workspace_lock_exclusive(cursor, workspace.pk)
        added_definitions = _definitions(workspace, document.definitions)
        _settings(workspace, document.settings)
        if added_definitions:
            Workspace.objects.filter(pk=workspace.pk).update(catalog_revision=F("catalog_revision") + 1)
            workspace.refresh_from_db()
        new, unchanged, mapping = _new_records(workspace, document.records, ids)
        _check_collections(workspace, new)
        _check_parents(workspace, new, mapping)
        vectors = _check_vectors(new)
        _number(workspace, new, seqs)
        for start in range(0, len(new), _CHUNK):
            _insert(workspace, new[start:start + _CHUNK], mapping, seqs)
            progress(len(new[start:start + _CHUNK]))
        for space, (dimensions, pairs) in vectors.items():
            embedding_space_ensure_index(space, dimensions)
            embeddings_insert(space=space, record_ids=[mapping[record.id] for record, _ in pairs],
                              workspace_ids=[workspace.pk] * len(pairs),
                              vector_texts=[vector_text_and_hash(list(vector))[0] for _, vector in pairs])
        pending = [mapping[record.id] for record in new if record.enriched_at is None]
        if pending:
            from ..tasks import enqueue_enrichment

            enqueue_enrichment(pending)
    return ImportResult(len(added_definitions), len(document.definitions) - len(added_definitions), len(new),
                        unchanged, sum(len(pairs) for _, pairs in vectors.values()))


def _definitions(workspace: Workspace, definitions: tuple[ImportDefinition, ...]) -> list[Definition]:
    stored = {(row.family, row.name, row.version): row for row in Definition.objects.filter(workspace=workspace)}
    active = {(row.family, row.name): row.version for row in stored.values() if row.active}
    added = []
    for item in definitions:
        _check_definition(item)
        held = stored.get((item.family, item.name, item.version))
        if held is not None:
            if held.hash != item.hash or held.active != item.active:
                raise _conflict(item.line, "hash", f"{item.family} {item.name}@{item.version} differs from this "
                                "workspace's (body or active flag); import into a workspace without it")
            continue
        if item.active and active.get((item.family, item.name), item.version) != item.version:
            raise _conflict(item.line, "active", f"{item.family} {item.name} has version "
                            f"{active[(item.family, item.name)]} active here; import into a workspace without it")
        active[(item.family, item.name)] = item.version if item.active else active.get((item.family, item.name))
        added.append(Definition(workspace=workspace, family=item.family, name=item.name, version=item.version,
                                active=item.active, body=item.body, hash=item.hash, contract_hash=item.contract_hash,
                                source_file=item.source_file, source_text=item.source_text))
    Definition.objects.bulk_create(added)
    return added


def _settings(workspace: Workspace, settings: dict | None) -> None:
    """The source's setting overrides (they shape answers: retrieval weights, budgets) go to a
    workspace that has none; a workspace with other overrides keeps them and refuses the import."""
    if settings is None or settings == workspace.settings:
        return
    if workspace.settings:
        raise _conflict(1, "settings", "this workspace has other setting overrides; unset them or import into a "
                                       "workspace without any")
    Workspace.objects.filter(pk=workspace.pk).update(settings=settings)
    workspace.settings = settings


def _check_definition(item: ImportDefinition) -> None:
    family = FAMILIES.get(item.family)
    if family is None:
        raise line_error(fail("family", f"{item.family!r} is not a definition family of this server",
                              "import_definition"), item.line)
    if definition_hash(item.body) != item.hash:
        raise line_error(fail("hash", "is not the SHA-256 of the body's canonical JSON; the line was altered",
                              "import_definition"), item.line)
    try:
        family.build(item.body)
    except (KeyError, TypeError, ValueError, AttributeError, ApiError) as error:
        raise line_error(fail("body", f"is not a {item.family} definition this server can read ({error})"[:300],
                              "import_definition"), item.line) from None


def _new_records(workspace: Workspace, records: tuple[ImportRecord, ...], ids: str):
    """The records to insert (in export order), how many the workspace holds already, and the
    id each exported id maps to."""
    mapping: dict[uuid.UUID, uuid.UUID] = {}
    last_seq = 0
    for record in records:
        if record.id in mapping:
            raise line_error(fail("id", f"record {record.id} is on an earlier line too", "import_format"), record.line)
        if record.seq <= last_seq:
            raise line_error(fail("seq", f"{record.seq} does not follow {last_seq}; records come in seq order",
                                  "import_format"), record.line)
        mapping[record.id] = import_record_id(workspace.pk, record.id, ids)
        last_seq = record.seq
    stored = _stored(list(mapping.values()))
    new, unchanged = [], 0
    for record in records:
        held = stored.get(mapping[record.id])
        if held is None:
            new.append(record)
            continue
        if held["workspace_id"] != workspace.pk:
            raise line_error(fail("id", f"record {record.id} exists in another workspace of this server; import "
                                  "with ids=remap", "import_id_taken"), record.line)
        if any(held[name] != getattr(record, name) for name in _SAME) or \
                sorted(held["derived_from"]) != sorted(mapping.get(p, p) for p in record.derived_from):
            raise _conflict(record.line, "id", f"record {mapping[record.id]} is stored here with other content")
        unchanged += 1
    return new, unchanged, mapping


def _stored(record_ids: list[uuid.UUID]) -> dict[uuid.UUID, dict]:
    if not record_ids:
        return {}
    columns = ("id", "workspace_id", "derived_from", *_SAME)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {', '.join(columns)} FROM {RECORD} WHERE id = ANY(%s::uuid[])", [record_ids])
        rows = [dict(zip(columns, row)) for row in cursor.fetchall()]
    for row in rows:  # a raw cursor reads jsonb as its text
        if isinstance(row["content"], str):
            row["content"] = json.loads(row["content"])
    return {row["id"]: row for row in rows}


def _check_collections(workspace: Workspace, records: list[ImportRecord]) -> None:
    catalog = catalog_for_workspace(workspace)
    for record in records:
        collection = catalog.get("collection", record.collection, record.collection_version)
        if collection is None or collection.contract_hash != record.collection_hash:
            raise line_error(fail("collection_version", f"collection {record.collection}@{record.collection_version} "
                                  "with this contract is not in the workspace's catalog; export it with its "
                                  "definitions", "unknown_collection_version"), record.line)
        if not record.tombstone:
            _check_content(collection.value, record)


def _check_content(collection, record: ImportRecord) -> None:
    """The rules a write checks a record's content with, that need no processor: its size, the
    declared field types and the collection's JSON Schema."""
    size = len(json.dumps(record.content, ensure_ascii=False).encode("utf-8"))
    if size > memseek_setting("MAX_CONTENT_BYTES"):
        raise line_error(fail("content", f"{size} bytes; at most {memseek_setting('MAX_CONTENT_BYTES')}",
                              "content_too_large"), record.line)
    problem = first_field_type_error(collection.fields.values(), record.content)
    if problem is not None:
        raise line_error(fail(f"content.{problem[0]}", problem[1], "field_type"), record.line)
    problem = first_schema_error(schema_check(collection.schema), record.content)
    if problem is not None:
        raise line_error(fail(f"content.{problem[0]}" if problem[0] else "content", problem[1], "content_schema"),
                         record.line)


def _check_parents(workspace: Workspace, records: list[ImportRecord], mapping: dict) -> None:
    """Every parent is an earlier line of the export or a record the workspace holds."""
    outside = {parent for record in records for parent in record.derived_from if parent not in mapping}
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id FROM {RECORD} WHERE workspace_id = %s AND id = ANY(%s::uuid[])",
                       [workspace.pk, list(outside)])
        held = {row[0] for row in cursor.fetchall()}
    lines = {record.id: record.line for record in records}
    for record in records:
        for position, parent in enumerate(record.derived_from):
            if parent in mapping and lines.get(parent, 0) >= record.line:
                raise line_error(fail(f"derived_from[{position}]", f"parent {parent} comes on a later line",
                                      "parent_order"), record.line)
            if parent not in mapping and parent not in held:
                raise line_error(fail(f"derived_from[{position}]", f"no record {parent} in the export or this "
                                      "workspace; export the entity it came from too", "parent_not_found"),
                                 record.line)


def _check_vectors(records: list[ImportRecord]) -> dict[str, tuple[int, list]]:
    """The vectors by space, each space of one dimension, the one its stored vectors have."""
    spaces: dict[str, tuple[int, list]] = {}
    for record in records:
        for position, vector in enumerate(record.vectors):
            dimensions, pairs = spaces.setdefault(vector.space, (_stored_dimensions(vector.space)
                                                                 or len(vector.vector), []))
            if len(vector.vector) != dimensions:
                raise line_error(fail(f"vectors[{position}].vector", f"has {len(vector.vector)} dimensions; space "
                                      f"{vector.space!r} has {dimensions}", "import_vector"), record.line)
            if not any(vector.vector):
                raise line_error(fail(f"vectors[{position}].vector", "is all zeros, which has no direction",
                                      "import_vector"), record.line)
            pairs.append((record, vector.vector))
    return spaces


def _stored_dimensions(space: str) -> int | None:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT vector_dims(embedding) FROM {EMBEDDING} WHERE space = %s LIMIT 1", [space])
        row = cursor.fetchone()
    return None if row is None else row[0]


def _number(workspace: Workspace, records: list[ImportRecord], seqs: str) -> None:
    """With ``seqs="preserve"``, refuse seqs the workspace has handed out already."""
    if seqs != "preserve" or not records:
        return
    counter = WorkspaceRecordCounter.objects.filter(workspace=workspace).values_list("last_seq", flat=True).first()
    if counter is not None and records[0].seq <= counter:
        raise line_error(fail("seq", f"seq {records[0].seq} is taken: this workspace has numbered up to {counter}; "
                              "import with seqs=renumber", "import_seq_taken"), records[0].line)


def _insert(workspace: Workspace, records: list[ImportRecord], mapping: dict, seqs: str) -> None:
    """Insert one chunk; with preserved seqs each run of consecutive seqs is one statement after
    the workspace's counter is set just below the run (the trigger numbers on from it)."""
    runs: list[list[ImportRecord]] = []
    for record in records:
        if seqs == "preserve" and runs and runs[-1][-1].seq + 1 == record.seq or seqs != "preserve" and runs:
            runs[-1].append(record)
        else:
            runs.append([record])
    for run in runs:
        if seqs == "preserve":
            WorkspaceRecordCounter.objects.update_or_create(workspace=workspace,
                                                            defaults={"last_seq": run[0].seq - 1})
        written = records_insert_rows(workspace=workspace, rows=[_row(record, mapping) for record in run])
        for record in run:
            if mapping[record.id] not in written:
                raise line_error(fail("dedupe_key", f"{record.dedupe_key!r} is the dedupe key of another record "
                                      "in this workspace", "dedupe_conflict"), record.line)
    lexical_records_changed(record_ids=[mapping[record.id] for record in records], inserted=True)


def _row(record: ImportRecord, mapping: dict) -> dict:
    bm25_tf, bm25_length = term_frequencies(record.text)
    en_tf, en_length = en_term_frequencies(record.text)
    return {"id": str(mapping[record.id]), "collection": record.collection,
            "collection_version": record.collection_version, "collection_hash": record.collection_hash,
            "entity": record.entity, "type": record.type, "key": record.key, "status": record.status,
            "text": record.text, "content": record.content, "scores": record.scores,
            "annotations": record.annotations, "annotation_meta": record.annotation_meta, "depth": record.depth,
            "derived_from": sorted(str(mapping.get(parent, parent)) for parent in record.derived_from),
            "dedupe_key": record.dedupe_key, "dedupe_hash": record.dedupe_hash,
            "occurred_at": record.occurred_at.isoformat(), "ready": record.enriched_at is not None,
            "tombstone": record.tombstone, "bm25_tf": bm25_tf, "bm25_length": bm25_length,
            "en_tf": en_tf, "en_length": en_length,
            "created_at": record.created_at.isoformat(), "last_accessed": record.last_accessed.isoformat(),
            "enriched_at": None if record.enriched_at is None else record.enriched_at.isoformat(),
            "access_count": record.access_count, "run_id": None if record.run_id is None else str(record.run_id),
            "enrichment_error": record.enrichment_error}


def _conflict(line: int, path: str, message: str) -> ApiError:
    return line_error(fail(path, message, "import_conflict"), line)
