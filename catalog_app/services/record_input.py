"""Parsing and preparing one ``POST /records`` item, before any database access.

``prepare_record`` turns the raw JSON of one item into a frozen ``PreparedRecord`` or raises
``ApiError`` whose path is relative to the item (``content.channel``). Every rule here is
local to the item: names and reserved values, the collection's mode, text and
``text_projection``, the content schema and declared field types, tombstones, size limits,
and client-supplied scores and annotations. Parents, depth and dedupe need the database and
live in ``record_ingest``.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone

from memseek_site.conf import memseek_setting
from memseek_site.parsing import (PUBLIC_NAME, fail, parse_bool, parse_datetime, parse_list, parse_object,
                                  parse_string, parse_uuid, type_name)

from ..bm25_terms import term_frequencies
from ..en_terms import en_term_frequencies
from ..catalog.collections import PLACEHOLDER, Collection
from ..catalog.hashing import canonical_form, canonical_json
from ..catalog.processors import Processor
from ..catalog.registry import Catalog
from ..record_limits import DEDUPE_KEY_CHARS, ENTITY_CHARS, KEY_CHARS
from .content_validation import SchemaCheck, first_field_type_error, first_schema_error, schema_check

RESERVED_TYPES = ("run", "erasure")
_FIELDS = {"entity", "collection", "collection_version", "type", "key", "text", "content", "status", "dedupe_key",
           "derived_from", "tombstone", "occurred_at", "scores", "annotations"}
_KEY = re.compile(r"^\S(.*\S)?$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class PreparedRecord:
    """One validated item, ready to insert once parents and dedupe are checked."""

    entity: str
    collection: str
    collection_version: int
    collection_hash: str
    type: str
    key: str | None
    status: str
    text: str
    content: dict
    scores: dict
    annotations: dict
    annotation_meta: dict
    tombstone: bool
    dedupe_key: str | None
    derived_from: tuple[uuid.UUID, ...]
    occurred_at: datetime | None  # None: the server's now()
    ready_at_insert: bool
    pending_processors: bool  # any embedding/llm/constant processor still to run
    dedupe_hash: str
    bm25_tf: dict
    bm25_length: int
    en_tf: dict
    en_length: int


@dataclass(frozen=True, slots=True)
class _CollectionRules:
    """What an item of one collection version is checked and classified with, beyond the
    collection itself; a pure function of the catalog, derived once per catalog revision."""

    processors: tuple[Processor, ...]  # the collection's required and optional processors
    ready_at_insert: bool  # every required processor is a client one (an item that is no tombstone)
    content_check: SchemaCheck  # of the collection's JSON Schema
    output_checks: dict[str, SchemaCheck]  # client json processor -> its output schema


def _rules(catalog: Catalog, collection: Collection) -> _CollectionRules:
    def build() -> _CollectionRules:
        processors = tuple(catalog.value("processor", name) for name in collection.processors)
        required = [catalog.value("processor", name) for name in collection.required_processors]
        outputs = {p.name: schema_check(p.output_schema) for p in processors
                   if p.source == "client" and p.kind == "json"}
        return _CollectionRules(processors, all(p.source == "client" for p in required),
                                schema_check(collection.schema), outputs)

    return catalog.derived(("record_input.rules", collection.name, collection.version), build)


def prepare_record(raw, catalog: Catalog, processor_hashes: dict[str, str], now: datetime) -> PreparedRecord:
    """Validate one item against ``catalog``; raises ``ApiError`` with an item-relative path."""
    item = parse_object(raw, "", allowed=_FIELDS, required=("entity", "type"))
    entity = parse_string(item["entity"], "entity", max_length=ENTITY_CHARS, code="entity")
    if entity == "*":
        raise fail("entity", "'*' is reserved; name the entity the record is about", "entity")
    collection_name = item.get("collection", "main")
    if isinstance(collection_name, str) and collection_name.startswith("_"):
        raise fail("collection", f"{collection_name!r} is reserved for the system", "reserved_collection")
    parse_string(collection_name, "collection", pattern=PUBLIC_NAME)
    record_type = parse_string(item["type"], "type", pattern=PUBLIC_NAME)
    if record_type in RESERVED_TYPES:
        raise fail("type", f"type {record_type!r} is reserved", "reserved_type")
    collection = _resolve_collection(catalog, collection_name, item.get("collection_version"))
    status = item.get("status", "active")
    if status not in ("active", "draft"):
        raise fail("status", f"must be 'active' or 'draft', got {status!r}")
    key = _key(item.get("key"), collection)
    tombstone = parse_bool(item.get("tombstone", False), "tombstone")
    derived_from = _parents(item.get("derived_from", []))
    dedupe_key = item.get("dedupe_key")
    if dedupe_key is not None:
        parse_string(dedupe_key, "dedupe_key", max_length=DEDUPE_KEY_CHARS)
    occurred_at = parse_datetime(item["occurred_at"], "occurred_at") if "occurred_at" in item else None
    content = item.get("content", {})
    if not isinstance(content, dict):
        raise fail("content", f"expected an object, got {type_name(content)}")
    if "tombstone" in content:
        raise fail("content.tombstone", "content.tombstone is reserved; send tombstone: true instead",
                   "reserved_content")
    rules = _rules(catalog, collection)
    if tombstone:
        text, content = _tombstone(item, key, derived_from)
        content_form = canonical_form(content)
    else:
        text, content, content_form = _text_and_content(item, content, collection, rules)
    scores, annotations, meta = _client_outputs(item, collection, rules, record_type, processor_hashes, now,
                                                tombstone=tombstone)
    pending = any(p.source != "client" for p in rules.processors if p.applies_to(record_type)) and not tombstone
    ready = tombstone or rules.ready_at_insert
    prepared = dict(entity=entity, collection=collection.name, collection_version=collection.version,
                    collection_hash=collection.contract_hash, type=record_type, key=key, status=status, text=text,
                    content=content, scores=scores, annotations=annotations, annotation_meta=meta,
                    tombstone=tombstone, dedupe_key=dedupe_key, derived_from=derived_from, occurred_at=occurred_at,
                    ready_at_insert=ready, pending_processors=pending)
    bm25_tf, bm25_length = term_frequencies(text)
    en_tf, en_length = en_term_frequencies(text)
    return PreparedRecord(**prepared, dedupe_hash=_dedupe_hash(prepared, item, content_form), bm25_tf=bm25_tf,
                          bm25_length=bm25_length, en_tf=en_tf, en_length=en_length)


def _resolve_collection(catalog: Catalog, name: str, version) -> Collection:
    if version is not None:
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise fail("collection_version", f"expected a positive integer, got {version!r}")
        collection = catalog.value("collection", name, version)
        if collection is None:
            if catalog.get("collection", name) is None and not catalog.versions("collection", name):
                raise fail("collection", f"unknown collection {name!r}", "unknown_collection")
            raise fail("collection_version", f"collection {name} has no version {version}",
                       "unknown_collection_version")
        return collection
    collection = catalog.value("collection", name)
    if collection is None:
        known = ", ".join(catalog.names("collection")) or "none loaded"
        raise fail("collection", f"unknown collection {name!r} (known: {known})", "unknown_collection")
    return collection


def _key(key, collection: Collection) -> str | None:
    if key is not None:
        parse_string(key, "key", max_length=KEY_CHARS)
        if not _KEY.fullmatch(key):
            raise fail("key", "must not start or end with whitespace")
    if collection.mode == "event" and key is not None:
        raise fail("key", f"collection {collection.name} is an event collection; records there have no key",
                   "record_mode")
    if collection.mode == "keyed" and key is None:
        raise fail("key", f"collection {collection.name} is keyed; every record needs a key", "record_mode")
    return key


def _parents(raw) -> tuple[uuid.UUID, ...]:
    parse_list(raw, "derived_from")
    if len(raw) > memseek_setting("MAX_DERIVED_FROM"):
        raise fail("derived_from", f"at most {memseek_setting('MAX_DERIVED_FROM')} parents, got {len(raw)}",
                   "too_many_parents")
    parents = [parse_uuid(value, f"derived_from[{index}]") for index, value in enumerate(raw)]
    if len(set(parents)) != len(parents):
        raise fail("derived_from", "lists the same parent twice", "duplicate_parent")
    return tuple(parents)


def _tombstone(item: dict, key: str | None, parents: tuple) -> tuple[str, dict]:
    if key is None:
        raise fail("key", "a tombstone retracts a keyed value and needs its key", "tombstone")
    if not parents:
        raise fail("derived_from", "a tombstone must cite at least one parent", "tombstone")
    if item.get("text") not in (None, ""):
        raise fail("text", "a tombstone has no text", "tombstone")
    if item.get("content", {}) != {}:
        raise fail("content", "a tombstone has no content", "tombstone")
    return "", {"text": "", "tombstone": True}


def _text_and_content(item: dict, content: dict, collection: Collection,
                      rules: _CollectionRules) -> tuple[str, dict, object]:
    """The record's text and content, and the content's ``canonical_form`` (its size is checked)."""
    text = item.get("text")
    if text is not None:
        parse_string(text, "text", allow_blank=True)
    elif collection.text_projection is not None:
        text = _project(collection.text_projection, content)
    else:
        raise fail("text", f"collection {collection.name} has no text_projection; send text", "text_required")
    if len(text) > memseek_setting("MAX_TEXT_CHARS"):
        raise fail("text", f"{len(text)} characters; at most {memseek_setting('MAX_TEXT_CHARS')}", "text_too_large")
    if "text" in content and content["text"] != text:
        raise fail("content.text", "differs from the record text; send one or make them equal", "text_mismatch")
    content = {**content, "text": text}
    form = canonical_form(content)
    size = len(canonical_json(form, converted=True).encode("utf-8"))
    if size > memseek_setting("MAX_CONTENT_BYTES"):
        raise fail("content", f"{size} bytes; at most {memseek_setting('MAX_CONTENT_BYTES')}", "content_too_large")
    problem = first_field_type_error(collection.fields.values(), content)
    if problem is not None:
        raise fail(f"content.{problem[0]}", problem[1], "field_type")
    problem = first_schema_error(rules.content_check, content)
    if problem is not None:
        inner, message = problem
        path = f"content.{inner}" if inner else "content"
        raise fail(path, message, "content_schema")
    return text, content, form


def _project(template: str, content: dict) -> str:
    def value(match):
        name = match.group(1)
        if content.get(name) is None:
            raise fail(f"content.{name}", "text_projection needs this value; send it or send text", "text_required")
        found = content[name]
        return found if isinstance(found, str) else json.dumps(found, ensure_ascii=False, separators=(",", ":"))

    return PLACEHOLDER.sub(value, template)


def _client_outputs(item: dict, collection: Collection, rules: _CollectionRules, record_type: str,
                    processor_hashes: dict[str, str], now: datetime, *, tombstone: bool) -> tuple[dict, dict, dict]:
    client = {p.name: p for p in rules.processors if p.source == "client" and p.applies_to(record_type)}
    raw_scores = item.get("scores", {})
    raw_annotations = item.get("annotations", {})
    for label, raw in (("scores", raw_scores), ("annotations", raw_annotations)):
        if not isinstance(raw, dict):
            raise fail(label, f"expected an object, got {type_name(raw)}")
    scores, annotations, meta = {}, {}, {}
    for name, value in raw_scores.items():
        processor = client.get(name)
        if processor is None or processor.kind != "score":
            raise fail(f"scores.{name}", f"{name!r} is not a client score processor of {collection.name}",
                       "client_output")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise fail(f"scores.{name}", "must be a finite number", "client_output")
        scores[name] = processor.clamp(value)
        annotations[name] = {"value": scores[name]}
    for name, value in raw_annotations.items():
        processor = client.get(name)
        if processor is None or processor.kind != "json":
            raise fail(f"annotations.{name}", f"{name!r} is not a client json processor of {collection.name}",
                       "client_output")
        if len(canonical_json(value).encode("utf-8")) > memseek_setting("MAX_ANNOTATION_BYTES"):
            raise fail(f"annotations.{name}", "exceeds MAX_ANNOTATION_BYTES", "annotation_too_large")
        problem = first_schema_error(rules.output_checks[name], value)
        if problem is not None:
            inner, message = problem
            raise fail(f"annotations.{name}" + (f".{inner}" if inner else ""), message, "client_output")
        annotations[name] = value
        for score_name, dotted in processor.score_fields.items():
            leaf = value
            for part in dotted.split("."):
                leaf = leaf.get(part) if isinstance(leaf, dict) else None
            if isinstance(leaf, (int, float)) and not isinstance(leaf, bool):
                scores[score_name] = leaf
    # A tombstone has no content to score, so it needs no client outputs (and is ready at once).
    for name in () if tombstone else collection.required_processors:
        if name in client and name not in annotations:
            place = "scores" if client[name].kind == "score" else "annotations"
            raise fail(f"{place}.{name}", f"required client processor {name} must be supplied",
                       "required_client_output")
    for name in annotations:
        meta[name] = {"completed_at": now.isoformat(), "config_hash": processor_hashes[name],
                      "output_hash": hashlib.sha256(canonical_json(annotations[name]).encode()).hexdigest(),
                      "status": "ok", "source": "client"}
    return scores, annotations, meta


def _dedupe_hash(prepared: dict, item: dict, content_form) -> str:
    """Identity of an idempotent retry: the canonical payload, with ``occurred_at`` and client
    outputs only when explicitly supplied (the content as its ``canonical_form``, converted once)."""
    payload = {key: prepared[key] for key in ("entity", "collection", "collection_version", "collection_hash",
                                              "type", "key", "status")}
    payload["derived_from"] = sorted(str(parent) for parent in prepared["derived_from"])
    occurred_at = prepared["occurred_at"]
    payload["occurred_at"] = occurred_at.astimezone(timezone.utc).isoformat() if occurred_at else None
    payload["scores"] = item.get("scores")
    payload["annotations"] = item.get("annotations")
    form = {**canonical_form(payload), "content": content_form}
    return hashlib.sha256(canonical_json(form, converted=True).encode("utf-8")).hexdigest()
