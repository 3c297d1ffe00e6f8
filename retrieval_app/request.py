"""The ``POST /retrieve`` body, parsed once and strictly into a frozen ``RetrieveRequest``.

Keys are camelCase as the spec writes them; every error is ``422 request_schema`` (or
``query_too_long``) with the camelCase dotted path of the offending value, and unknown keys are
errors. ``mode: "deterministic"`` together with ``rerank: true`` is contradictory: ``400
mode_conflict``. ``excludeSuperseded`` is accepted (a boolean) and ignored, as the spec says.
Catalog rules (collections, tag fields and their types) are checked later, against the
workspace's catalog, with the same paths.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timezone

from catalog_app.bm25_terms import query_terms_check
from catalog_app.catalog.hashing import canonical_json
from catalog_app.record_limits import ENTITY_CHARS
from memseek_site.conf import memseek_setting
from memseek_site.errors import ApiError
from memseek_site.parsing import (PUBLIC_NAME, at, fail, parse_bool, parse_datetime, parse_int, parse_list,
                                  parse_object, parse_string)

from .settings import MAX_BUDGET, MIN_BUDGET

MODES = ("assisted", "deterministic")
AXES = ("valid", "transaction")
DEFAULT_TOP_N = 20
MAX_TOP_N = 100
MAX_LIST = 100
MAX_TAG_FIELDS = 16
AGENT_CHARS = 255
_KEYS = {"query", "entity", "entities", "collections", "types", "tags", "agentId", "topN", "tokenBudget", "mode",
         "rerank", "raw", "includeSuperseded", "excludeSuperseded", "asOf", "asOfAxis", "explain"}


@dataclass(frozen=True, slots=True)
class TagFilter:
    """``tags.<field>``: one value (``eq``) or several (``in``); array fields match any."""

    field: str
    values: tuple  # one or more scalars
    many: bool  # sent as a list


@dataclass(frozen=True, slots=True)
class RetrieveRequest:
    query: str
    entities: tuple[str, ...] | None
    collections: tuple[str, ...] | None  # None: every collection of the workspace
    types: tuple[str, ...] | None
    tags: tuple[TagFilter, ...]
    agent_id: str | None
    top_n: int
    token_budget: int | None  # None: the workspace setting retrieval.tokenBudget
    mode: str
    rerank: bool
    raw: bool
    include_superseded: bool
    as_of: datetime | None
    as_of_axis: str
    explain: bool

    def canonical(self, effective_budget: int | None) -> str:
        """Canonical JSON of the request as it was served (defaults applied), for the receipt hash."""
        return canonical_json({
            "query": self.query, "entities": list(self.entities) if self.entities is not None else None,
            "collections": list(self.collections) if self.collections is not None else None,
            "types": list(self.types) if self.types is not None else None,
            "tags": {tag.field: list(tag.values) if tag.many else tag.values[0] for tag in self.tags},
            "agentId": self.agent_id, "topN": self.top_n, "tokenBudget": effective_budget, "mode": self.mode,
            "rerank": self.rerank, "raw": self.raw, "includeSuperseded": self.include_superseded,
            "asOf": self.as_of.astimezone(timezone.utc).isoformat() if self.as_of is not None else None,
            "asOfAxis": self.as_of_axis, "explain": self.explain})


def parse_question(value, path: str = "query") -> str:
    """The question of a retrieval (``/retrieve``, ``/memory/search``): a string of at most
    ``MAX_QUERY_CHARS`` characters (else ``422 query_too_long``) and ``MAX_QUERY_TERMS`` terms."""
    query = parse_string(value, path)
    limit = memseek_setting("MAX_QUERY_CHARS")
    if len(query) > limit:
        raise ApiError("query_too_long", f"query has {len(query)} characters; at most {limit}", path=path)
    query_terms_check(query, path)
    return query


def parse_retrieve_request(raw) -> RetrieveRequest:
    """Parse a ``POST /retrieve`` body; raises ``ApiError``."""
    doc = parse_object(raw, "", allowed=_KEYS, required=("query",))
    query = parse_question(doc["query"])
    if "entity" in doc and "entities" in doc:
        raise fail("entity", "send entity or entities, not both")
    entities = None
    if "entity" in doc:
        entities = (parse_string(doc["entity"], "entity", max_length=ENTITY_CHARS),)
    elif "entities" in doc:
        entities = _strings(doc["entities"], "entities", max_length=ENTITY_CHARS)
    mode = doc.get("mode", "assisted")
    if mode not in MODES:
        raise fail("mode", f"must be one of {', '.join(MODES)}")
    rerank = parse_bool(doc.get("rerank", False), "rerank")
    if mode == "deterministic" and rerank:
        raise ApiError("mode_conflict", "mode deterministic never reranks; send mode assisted to rerank, or drop "
                       "rerank: true", path="rerank")
    if "excludeSuperseded" in doc:
        parse_bool(doc["excludeSuperseded"], "excludeSuperseded")  # accepted for compatibility, ignored
    axis = doc.get("asOfAxis", "valid")
    if axis not in AXES:
        raise fail("asOfAxis", f"must be one of {', '.join(AXES)}")
    return RetrieveRequest(
        query=query, entities=entities,
        collections=_strings(doc["collections"], "collections", pattern=PUBLIC_NAME) if "collections" in doc else None,
        types=_strings(doc["types"], "types", pattern=PUBLIC_NAME) if "types" in doc else None,
        tags=_tags(doc.get("tags", {})),
        agent_id=parse_string(doc["agentId"], "agentId", max_length=AGENT_CHARS) if "agentId" in doc else None,
        top_n=parse_int(doc.get("topN", DEFAULT_TOP_N), "topN", minimum=1, maximum=MAX_TOP_N),
        token_budget=parse_int(doc["tokenBudget"], "tokenBudget", minimum=MIN_BUDGET, maximum=MAX_BUDGET)
        if "tokenBudget" in doc else None,
        mode=mode, rerank=rerank, raw=parse_bool(doc.get("raw", False), "raw"),
        include_superseded=parse_bool(doc.get("includeSuperseded", False), "includeSuperseded"),
        as_of=parse_datetime(doc["asOf"], "asOf") if "asOf" in doc else None, as_of_axis=axis,
        explain=parse_bool(doc.get("explain", False), "explain"))


def _strings(value, path: str, *, max_length: int | None = None, pattern=None) -> tuple[str, ...]:
    items = parse_list(value, path, max_items=MAX_LIST, min_items=1)
    parsed = tuple(parse_string(item, at(path, index), max_length=max_length, pattern=pattern)
                   for index, item in enumerate(items))
    if len(set(parsed)) != len(parsed):
        raise fail(path, "must not repeat a value")
    return parsed


def _tags(value) -> tuple[TagFilter, ...]:
    doc = parse_object(value, "tags", allowed=value.keys() if isinstance(value, dict) else ())
    if len(doc) > MAX_TAG_FIELDS:
        raise fail("tags", f"at most {MAX_TAG_FIELDS} fields")
    tags = []
    for field, operand in doc.items():
        path = at("tags", field)
        parse_string(field, path, pattern=PUBLIC_NAME)
        if isinstance(operand, list):
            items = parse_list(operand, path, max_items=MAX_LIST, min_items=1)
            tags.append(TagFilter(field, tuple(_scalar(item, at(path, i)) for i, item in enumerate(items)), True))
        else:
            tags.append(TagFilter(field, (_scalar(operand, path),), False))
    return tuple(tags)


def _scalar(value, path: str):
    if value is None or isinstance(value, (dict, list)):
        raise fail(path, "must be a string, number or boolean")
    if isinstance(value, float) and not math.isfinite(value):
        raise fail(path, "must be finite")
    return value
