"""Exporting a workspace (or one entity of it) as JSON Lines (docs/export-import.md).

Invariants: an export is a header line, every catalog definition, every record row (every
version of every lane: superseded values, drafts and tombstones too) in ``seq`` order with its
vectors, then an ``end`` line. Every line but the header and the end carries ``cursor``: an
export started from that cursor yields exactly the lines after it, so an interrupted download
plus its resumption is the same text as one full export of an unchanged workspace. One call reads
one snapshot (``REPEATABLE READ`` when it owns its transaction); a resumption reads a newer one.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

from django.db import connection, transaction

from memseek_site.parsing import fail

from ..catalog.runtime import catalog_for_workspace
from ..models import Definition, Workspace
from ..record_sql import EMBEDDING, PUBLIC_SEQ, RECORD

FORMAT = "memseek-export/1"
PAGE_ROWS = 500
_CURSOR = re.compile(r"^x1\.(d|r)\.([0-9]{1,19})$")
# The exported record columns, in line order; ``seq`` is the workspace's own ordinal.
RECORD_FIELDS = ("id", "seq", "collection", "collection_version", "collection_hash", "entity", "type", "key",
                 "status", "text", "content", "scores", "annotations", "annotation_meta", "enrichment_error",
                 "depth", "derived_from", "run_id", "dedupe_key", "dedupe_hash", "occurred_at", "created_at",
                 "last_accessed", "access_count", "enriched_at", "tombstone")
_JSON_FIELDS = ("content", "scores", "annotations", "annotation_meta", "enrichment_error")
DEFINITION_FIELDS = ("family", "name", "version", "active", "body", "hash", "contract_hash", "source_file",
                     "source_text")
_SELECT = (f"SELECT r.id, r.{PUBLIC_SEQ}, r.collection, r.collection_version, r.collection_hash, r.entity, r.type, "
           "r.key, r.status, r.text, r.content, r.scores, r.annotations, r.annotation_meta, r.enrichment_error, "
           "r.depth, r.derived_from, r.run_id, r.dedupe_key, r.dedupe_hash, r.occurred_at, r.created_at, "
           "r.last_accessed, r.access_count, r.enriched_at, r.tombstone, "
           "COALESCE((SELECT json_agg(json_build_object('space', e.space, 'vector', e.embedding::text::json) "
           f"ORDER BY e.space) FROM {EMBEDDING} e WHERE e.record_id = r.id), '[]') "
           f"FROM {RECORD} r WHERE r.workspace_id = %s AND r.{PUBLIC_SEQ} > %s")


@dataclass(frozen=True, slots=True)
class ExportCursor:
    """Where an export resumes: after definition number ``after`` (``phase`` ``d``), or after the
    record of workspace seq ``after`` (``phase`` ``r``)."""

    phase: str
    after: int

    def text(self) -> str:
        return f"x1.{self.phase}.{self.after}"


def export_cursor_parse(raw: str, path: str = "cursor") -> ExportCursor:
    """The cursor a line carried, or ``422 invalid_cursor`` naming ``path``."""
    match = _CURSOR.fullmatch(raw)
    if match is None or int(match.group(2)) > 2**63 - 1:
        raise fail(path, f"{raw[:80]!r} is not an export cursor; pass the cursor of the last line you kept",
                   "invalid_cursor")
    return ExportCursor(match.group(1), int(match.group(2)))


def export_count(*, workspace: Workspace, entity: str | None) -> int:
    """How many record lines a full export of ``workspace`` (or ``entity``) has now."""
    rows = workspace.record_set.all() if entity is None else workspace.record_set.filter(entity=entity)
    return rows.count()


def workspace_export_lines(*, workspace: Workspace, entity: str | None = None,
                           cursor: ExportCursor | None = None) -> Iterator[str]:
    """The export's lines (each JSON text ending in a newline), read lazily page by page in one
    transaction; closing the iterator early ends it."""
    with transaction.atomic():
        # Nested in a caller's transaction (a test's), the snapshot is the caller's.
        if not connection.savepoint_ids:
            with connection.cursor() as db:
                db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        yield from _lines(workspace, entity, cursor)


def _lines(workspace: Workspace, entity: str | None, cursor: ExportCursor | None) -> Iterator[str]:
    if cursor is None:
        yield _json(_header(workspace, entity))
    after_definition = cursor.after if cursor is not None and cursor.phase == "d" else 0
    if cursor is None or cursor.phase == "d":
        definitions = Definition.objects.filter(workspace=workspace).order_by("family", "name", "version")
        for number, definition in enumerate(definitions.values_list(*DEFINITION_FIELDS), start=1):
            if number > after_definition:
                yield _json({"kind": "definition", **dict(zip(DEFINITION_FIELDS, definition)),
                             "cursor": ExportCursor("d", number).text()})
    after_seq = cursor.after if cursor is not None and cursor.phase == "r" else 0
    where, params = ("", []) if entity is None else (" AND r.entity = %s", [entity])
    while True:
        with connection.cursor() as db:
            db.execute(f"{_SELECT}{where} ORDER BY r.{PUBLIC_SEQ} LIMIT %s",
                       [workspace.pk, after_seq, *params, PAGE_ROWS])
            rows = db.fetchall()
        for row in rows:
            yield _json(_record_line(row))
        if len(rows) < PAGE_ROWS:
            break
        after_seq = rows[-1][1]
    yield _json({"kind": "end", "records": export_count(workspace=workspace, entity=entity)})


def _header(workspace: Workspace, entity: str | None) -> dict:
    embedding = catalog_for_workspace(workspace).value("models", "models").embedding
    return {"kind": "header", "format": FORMAT, "workspace": workspace.name, "entity": entity,
            "records": export_count(workspace=workspace, entity=entity), "settings": workspace.settings,
            "embedding": {"space": embedding.space, "model": embedding.model, "dimensions": embedding.dimensions}}


def _record_line(row: tuple) -> dict:
    line = dict(zip(RECORD_FIELDS, row[:len(RECORD_FIELDS)]))
    # Django's connection hands raw cursors jsonb as its text (the ORM's fields decode it).
    for name in _JSON_FIELDS:
        if isinstance(line[name], str):
            line[name] = json.loads(line[name])
    vectors = row[len(RECORD_FIELDS)]
    line["vectors"] = json.loads(vectors) if isinstance(vectors, str) else vectors
    line["cursor"] = ExportCursor("r", line["seq"]).text()
    return {"kind": "record", **line}


def _json(value: dict) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_plain) + "\n"


def _plain(value):
    """UUIDs as text, timestamps as ISO 8601 with their offset (microseconds kept)."""
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)
