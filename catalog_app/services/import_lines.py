"""Reading an export (``workspace_export``) back: JSON Lines text into frozen values, before any
database access.

Invariants: every line is decoded by the one strict JSON decoding of request bodies
(``memseek_site.json_body``) and read with the strict readers, so an unknown key, a wrong type, a
value out of range or a malformed line is an ``ApiError`` whose path starts ``lines[i]`` (``i``
counted from 0) and whose ``line`` member is the line number an editor shows (from 1). The
document is a header, definitions, records and an ``end`` line whose count matches, in that order;
anything else (a truncated download, two exports glued together) is refused whole.
"""
from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from memseek_site.conf import memseek_setting
from memseek_site.errors import ApiError
from memseek_site.json_body import decode_json_body
from memseek_site.parsing import (PUBLIC_NAME, at, fail, parse_bool, parse_datetime, parse_int, parse_list,
                                  parse_number, parse_object, parse_string, parse_uuid)

from ..record_limits import DEDUPE_KEY_CHARS, ENTITY_CHARS, KEY_CHARS
from .workspace_export import DEFINITION_FIELDS, FORMAT, RECORD_FIELDS

_HASH = re.compile(r"^[0-9a-f]{64}$")
_OPTIONAL_HASH = re.compile(r"^([0-9a-f]{64})?$")
_SPACE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$")
_LINE_KEYS = {"header": {"kind", "format", "workspace", "entity", "records", "embedding", "settings"},
              "definition": {"kind", "cursor", *DEFINITION_FIELDS},
              "record": {"kind", "cursor", "vectors", *RECORD_FIELDS},
              "end": {"kind", "records"}}
MAX_VECTORS = 16


@dataclass(frozen=True, slots=True)
class ImportDefinition:
    line: int
    family: str
    name: str
    version: int
    active: bool
    body: object
    hash: str
    contract_hash: str
    source_file: str
    source_text: str


@dataclass(frozen=True, slots=True)
class ImportVector:
    space: str
    vector: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class ImportRecord:
    line: int
    id: uuid.UUID
    seq: int
    collection: str
    collection_version: int
    collection_hash: str
    entity: str
    type: str
    key: str | None
    status: str
    text: str
    content: dict
    scores: dict
    annotations: dict
    annotation_meta: dict
    enrichment_error: dict | None
    depth: int
    derived_from: tuple[uuid.UUID, ...]
    run_id: uuid.UUID | None
    dedupe_key: str | None
    dedupe_hash: str
    occurred_at: datetime
    created_at: datetime
    last_accessed: datetime
    access_count: int
    enriched_at: datetime | None
    tombstone: bool
    vectors: tuple[ImportVector, ...]


@dataclass(frozen=True, slots=True)
class ImportDocument:
    entity: str | None
    settings: dict | None  # the source workspace's setting overrides (None: the export names none)
    definitions: tuple[ImportDefinition, ...]
    records: tuple[ImportRecord, ...]


def line_error(error: ApiError, number: int) -> ApiError:
    """``error`` (its path relative to one line) as the document reports it: at ``lines[i]`` with
    the line number in the detail and in ``line``."""
    placed = error.prefixed(f"line {number}", f"lines[{number - 1}]")
    placed.extra["line"] = number
    return placed


def import_document_parse(lines: Iterable[bytes]) -> ImportDocument:
    """Read every line of an export (``bytes`` each, the newline optional); raises ``ApiError``
    at the first bad line, or at ``lines`` when the document as a whole is not an export."""
    started, header, definitions, records, end = False, (None, None), [], [], None
    number = 0
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            raise line_error(fail("", "is empty; an export has one JSON object on every line", "import_format"),
                             number)
        try:
            value = decode_json_body(raw)
            kind = _kind(value, started, end is not None)
            if kind == "header":
                started, header = True, _header(value)
            elif kind == "definition":
                if records:
                    raise fail("kind", "a definition after a record; definitions come first", "import_format")
                definitions.append(_definition(value, number))
            elif kind == "record":
                records.append(_record(value, number))
            else:
                end = parse_int(parse_object(value, "", allowed=_LINE_KEYS["end"], required=("records",))["records"],
                                "records", minimum=0)
        except ApiError as error:
            raise line_error(error, number) from None
    if not started:
        raise fail("lines", "the document is empty; send an export's lines", "import_format")
    if end is None:
        raise fail("lines", f"the export ends after line {number} without its end line; it was cut short, "
                            "so resume the download from the last line's cursor", "import_incomplete")
    return ImportDocument(*header, tuple(definitions), tuple(records))


def _kind(value, started: bool, ended: bool) -> str:
    line = parse_object(value, "", required=("kind",))
    kind = line["kind"]
    if kind not in _LINE_KEYS:
        raise fail("kind", f"{str(kind)[:40]!r} is not a line kind; one of header, definition, record, end",
                   "import_format")
    if ended:
        raise fail("", "comes after the end line; send one export per import", "import_format")
    if (kind == "header") == started:
        raise fail("kind", "the first line is the header, and only the first" if started
                   else "the first line must be the export's header", "import_format")
    return kind


def _header(value) -> tuple[str | None, dict | None]:
    """The header's entity and workspace settings."""
    line = parse_object(value, "", allowed=_LINE_KEYS["header"], required=("format",))
    if line["format"] != FORMAT:
        raise fail("format", f"{str(line['format'])[:40]!r} is not a format this server reads; it reads {FORMAT}",
                   "import_format")
    entity, settings = line.get("entity"), line.get("settings")
    return (None if entity is None else parse_string(entity, "entity", max_length=ENTITY_CHARS),
            None if settings is None else parse_object(settings, "settings"))


def _definition(value, number: int) -> ImportDefinition:
    line = parse_object(value, "", allowed=_LINE_KEYS["definition"], required=DEFINITION_FIELDS)
    return ImportDefinition(
        line=number, family=parse_string(line["family"], "family", max_length=32, pattern=PUBLIC_NAME),
        name=parse_string(line["name"], "name", max_length=64), version=parse_int(line["version"], "version",
                                                                               minimum=1, maximum=2**31 - 1),
        active=parse_bool(line["active"], "active"), body=line["body"],
        hash=parse_string(line["hash"], "hash", pattern=_HASH),
        contract_hash=parse_string(line["contract_hash"], "contract_hash", pattern=_OPTIONAL_HASH, allow_blank=True),
        source_file=parse_string(line["source_file"], "source_file", max_length=512, allow_blank=True),
        source_text=parse_string(line["source_text"], "source_text", allow_blank=True,
                                 max_length=memseek_setting("MAX_BODY_BYTES")))


def _record(value, number: int) -> ImportRecord:
    line = parse_object(value, "", allowed=_LINE_KEYS["record"], required=(*RECORD_FIELDS, "vectors"))
    status = parse_string(line["status"], "status")
    if status not in ("active", "draft"):
        raise fail("status", f"{status!r} is not a status; active or draft")
    key = line["key"]
    return ImportRecord(
        line=number, id=parse_uuid(line["id"], "id"), seq=parse_int(line["seq"], "seq", minimum=1, maximum=2**63 - 1),
        collection=parse_string(line["collection"], "collection", pattern=PUBLIC_NAME),
        collection_version=parse_int(line["collection_version"], "collection_version", minimum=1, maximum=2**31 - 1),
        collection_hash=parse_string(line["collection_hash"], "collection_hash", max_length=64),
        entity=parse_string(line["entity"], "entity", max_length=ENTITY_CHARS),
        type=parse_string(line["type"], "type", pattern=PUBLIC_NAME),
        key=None if key is None else parse_string(key, "key", max_length=KEY_CHARS),
        status=status, text=parse_string(line["text"], "text", allow_blank=True,
                                         max_length=memseek_setting("MAX_TEXT_CHARS")),
        content=parse_object(line["content"], "content"), scores=_scores(line["scores"]),
        annotations=parse_object(line["annotations"], "annotations"),
        annotation_meta=parse_object(line["annotation_meta"], "annotation_meta"),
        enrichment_error=(None if line["enrichment_error"] is None
                          else parse_object(line["enrichment_error"], "enrichment_error")),
        depth=parse_int(line["depth"], "depth", minimum=0, maximum=16),
        derived_from=tuple(parse_uuid(parent, at("derived_from", index))
                           for index, parent in enumerate(parse_list(line["derived_from"], "derived_from",
                                                                     max_items=256))),
        run_id=None if line["run_id"] is None else parse_uuid(line["run_id"], "run_id"),
        dedupe_key=None if line["dedupe_key"] is None else parse_string(line["dedupe_key"], "dedupe_key",
                                                                        max_length=DEDUPE_KEY_CHARS),
        dedupe_hash=parse_string(line["dedupe_hash"], "dedupe_hash", pattern=_OPTIONAL_HASH, allow_blank=True),
        occurred_at=parse_datetime(line["occurred_at"], "occurred_at"),
        created_at=parse_datetime(line["created_at"], "created_at"),
        last_accessed=parse_datetime(line["last_accessed"], "last_accessed"),
        access_count=parse_int(line["access_count"], "access_count", minimum=0, maximum=2**31 - 1),
        enriched_at=None if line["enriched_at"] is None else parse_datetime(line["enriched_at"], "enriched_at"),
        tombstone=parse_bool(line["tombstone"], "tombstone"), vectors=_vectors(line["vectors"]))


def _scores(value) -> dict:
    scores = parse_object(value, "scores")
    return {name: parse_number(score, at("scores", name)) for name, score in scores.items()}


def _vectors(value) -> tuple[ImportVector, ...]:
    vectors, spaces = [], set()
    for index, raw in enumerate(parse_list(value, "vectors", max_items=MAX_VECTORS)):
        path = at("vectors", index)
        item = parse_object(raw, path, allowed={"space", "vector"}, required=("space", "vector"))
        space = parse_string(item["space"], at(path, "space"), pattern=_SPACE)
        if space in spaces:
            raise fail(at(path, "space"), f"a second vector in space {space!r}; a record has one per space")
        spaces.add(space)
        components = parse_list(item["vector"], at(path, "vector"), min_items=8, max_items=4096)
        vectors.append(ImportVector(space, tuple(parse_number(component, at(at(path, "vector"), position))
                                                 for position, component in enumerate(components))))
    return tuple(vectors)
