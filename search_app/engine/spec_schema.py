"""The SearchSpec as a JSON Schema (Draft 2020-12) document, served by ``GET /rank/schema``.

Invariant: every body ``parse_search_spec`` accepts validates against ``SEARCH_SPEC_SCHEMA``,
and every body the schema rejects, the parser rejects too. The schema is exact except for the
rules listed under ``x-parser-only-rules`` (uniqueness of one member across list items,
references between members, date arithmetic and rank-tree size); those are enforced by the
parser alone, so there the schema is a superset.
``tests/search_app/test_spec.py`` checks both directions against the parser's tables.

The rank grammar is ``rank_expression.RANK_GRAMMAR``, embedded as its own schema resource so
its internal ``#/$defs/...`` references keep working. Pure Python: no Django imports.
"""
from __future__ import annotations

import copy

from .rank_grammar import RANK_GRAMMAR
from .spec import INCLUDE_NAMES, MAX_LIST, MAX_PROJECTIONS, MODES, OPERATORS, PUBLIC_NAME, QUERY_MODES, \
    SYSTEM_COLLECTION

SEARCH_SPEC_ID = "urn:memseek:schema:search-spec"
RANK_EXPRESSION_ID = "urn:memseek:schema:rank-expression"
PER_SEARCH_KEYS = ("mode", "scope", "where", "order_by", "rank")

# Python's ``$`` also matches before a trailing newline, and jsonschema evaluates ``pattern``
# with Python's ``re``; this lookahead means "end of string" in both Python and ECMA-262.
_END = r"(?![\s\S])"
_NAME_PATTERN = PUBLIC_NAME.pattern.removesuffix("$") + _END
# An ISO 8601 timestamp ending in a UTC offset. The parser (``datetime.fromisoformat``) decides
# whether the date and time themselves are valid; the pattern only refuses naive timestamps.
_TIMESTAMP_PATTERN = r"^[\s\S]{8,}?(?:[Zz]|[+-]\d{2}(?::?\d{2}(?::?\d{2}(?:[.,]\d+)?)?)?)" + _END
# 1 to 128 characters once surrounding whitespace (``str.strip``) is removed.
_ANCHOR_PATTERN = r"^\s*\S(?:[\s\S]{0,126}\S)?\s*$"
_NON_BLANK_PATTERN = r"\S"


def _ref(name: str) -> dict:
    return {"$ref": f"#/$defs/{name}"}


def _integer(minimum: int, maximum: int | None = None, **extra) -> dict:
    schema = {"type": "integer", "minimum": minimum}
    if maximum is not None:
        schema["maximum"] = maximum
    return {**schema, **extra}


def _unique_list(items: dict, max_items: int, **extra) -> dict:
    return {"type": "array", "items": items, "maxItems": max_items, "uniqueItems": True, **extra}


def _with_mode(modes) -> dict:
    """Matches an object whose ``mode`` is present and one of ``modes``."""
    return {"required": ["mode"], "properties": {"mode": {"enum": list(modes)}}}


_LLM_JUDGE = {"required": ["rerank"], "properties": {"rerank": {
    "type": "object", "required": ["backend"], "properties": {"backend": {"const": "llm_judge"}}}}}
_QUERY_REQUIRED = {"required": ["q"], "properties": {"q": _ref("query_text")}}

SEARCH_SPEC_SCHEMA: dict = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": SEARCH_SPEC_ID,
    "title": "Memseek SearchSpec",
    "description": "The body of POST /search and the query of a search view: either one search (mode at the "
                   "top level) or several combined searches (sources plus fuse). Unknown keys are errors.",
    "x-parser-only-rules": [
        "order_by fields are unique within one order_by list",
        "source names are unique",
        "every key of scope.collection_versions also appears in scope.collections",
        "occurred_after and occurred_before are real ISO 8601 timestamps, and occurred_after is earlier",
        "a rank or boost expression has at most 5 levels and 16 nodes, and score names are non-blank",
        "a query signal in a rank expression only in the modes the rank grammar's x-signal-modes names for it "
        "(similarity in vector and hybrid; text_match, bm25 and bm25_en in text and hybrid), and none in a boost",
        "q has at most MAX_QUERY_CHARS characters (422 query_too_long), see x-max-length-setting",
    ],
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "q": {"type": ["string", "null"], "x-max-length-setting": "MAX_QUERY_CHARS",
              "description": "Query text; non-blank and required when any search is vector, text or hybrid."},
        "mode": _ref("mode"),
        "scope": _ref("scope"),
        "where": _ref("where"),
        "order_by": _ref("order_by"),
        "rank": _ref("rank"),
        "params": _ref("params"),
        "k": _ref("k"),
        "include": _unique_list({"enum": list(INCLUDE_NAMES)}, MAX_LIST, default=[],
                                description="Record metadata to attach to each result."),
        "fields": _unique_list(_ref("name"), MAX_PROJECTIONS, default=[],
                               description="Declared, returnable fields to attach to each result."),
        "annotations": _unique_list(_ref("name"), MAX_PROJECTIONS, default=[],
                                    description="Required enrichments to attach to each result."),
        "render": {"type": "boolean", "default": False},
        "fence": _ref("fence"),
        "rerank": _ref("rerank"),
        "graph_boost": _ref("graph_boost"),
        "sources": {"type": "array", "minItems": 1, "maxItems": 8, "items": _ref("source"),
                    "description": "1 to 8 searches with unique names, merged by fuse."},
        "fuse": _ref("fuse"),
        "boost": {**_ref("rank"), "description": "Applied after fusion: RRF * max(0, boost). May not use "
                                                 "similarity, text_match, bm25 or bm25_en."},
    },
    "dependentSchemas": {
        "fence": {"required": ["render"], "properties": {"render": {"const": True}}},
    },
    "if": {"required": ["sources"]},
    "then": {
        "description": "Combined searches: fuse is required; per-search keys live inside each source.",
        "required": ["fuse"],
        "properties": {key: False for key in PER_SEARCH_KEYS},
        "allOf": [
            {"if": {"properties": {"sources": {"contains": _with_mode(QUERY_MODES)}}}, "then": _QUERY_REQUIRED},
            {"if": _LLM_JUDGE, "then": {"properties": {"sources": {"items": _with_mode(QUERY_MODES)}}}},
        ],
    },
    "else": {
        "description": "One search: mode is required; fuse and boost belong to combined searches.",
        "required": ["mode"],
        "properties": {"fuse": False, "boost": False},
        "allOf": [
            _ref("structured_rules"),
            {"if": _with_mode(QUERY_MODES), "then": _QUERY_REQUIRED},
            {"if": _LLM_JUDGE, "then": _with_mode(QUERY_MODES)},
        ],
    },
    "$defs": {
        "name": {"type": "string", "pattern": _NAME_PATTERN},
        "query_text": {"type": "string", "pattern": _NON_BLANK_PATTERN},
        "mode": {"enum": list(MODES)},
        "k": _integer(1, 100, default=20),
        "rank": {"$ref": RANK_EXPRESSION_ID},
        "rank_expression": {**copy.deepcopy(RANK_GRAMMAR), "$id": RANK_EXPRESSION_ID},
        "structured_rules": {
            "description": "structured search needs a non-empty order_by and takes no rank.",
            "if": _with_mode(["structured"]),
            "then": {"required": ["order_by"], "properties": {"order_by": {"minItems": 1}, "rank": False}},
        },
        "source": {
            "type": "object",
            "additionalProperties": False,
            "required": ["name", "mode"],
            "properties": {
                "name": _ref("name"),
                "mode": _ref("mode"),
                "scope": _ref("scope"),
                "where": _ref("where"),
                "order_by": _ref("order_by"),
                "rank": _ref("rank"),
                "params": _ref("params"),
                "k": _ref("k"),
                "weight": {"type": "number", "exclusiveMinimum": 0, "maximum": 100, "default": 1.0},
            },
            "allOf": [_ref("structured_rules")],
        },
        "fuse": {
            "type": "object",
            "additionalProperties": False,
            "required": ["kind"],
            "properties": {"kind": {"const": "rrf"}, "rank_constant": _integer(1, 1000, default=60)},
        },
        "params": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"candidates": _integer(1, 1000, description="Default min(1000, max(100, 10 * k)).")},
        },
        "collection": {"anyOf": [_ref("name"), {"const": SYSTEM_COLLECTION}]},
        "non_empty_strings": _unique_list({"type": "string", "minLength": 1}, MAX_LIST),
        "timestamp": {"type": "string", "format": "date-time", "pattern": _TIMESTAMP_PATTERN},
        "scope": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "collections": _unique_list(_ref("collection"), MAX_LIST),
                "collection_versions": {
                    "type": "object",
                    "propertyNames": _ref("collection"),
                    "additionalProperties": {"type": "array", "minItems": 1, "maxItems": MAX_LIST, "uniqueItems": True,
                                             "items": _integer(1)},
                },
                "entities": _ref("non_empty_strings"),
                "types": _ref("non_empty_strings"),
                "status": {"enum": ["active", "draft", "all"], "default": "active"},
                "keyed": {"enum": [True, False, "any"], "default": "any"},
                "versions": {"enum": ["current", "all"], "default": "current"},
                "occurred_after": _ref("timestamp"),
                "occurred_before": _ref("timestamp"),
                "depth_lte": _integer(0),
            },
        },
        "scalar": {"type": ["string", "number", "boolean"]},
        "value_list": {"type": "array", "minItems": 1, "maxItems": MAX_LIST, "items": _ref("scalar")},
        "conditions": {
            "type": "object",
            "minProperties": 1,
            "additionalProperties": False,
            "properties": {
                **{op: _ref("scalar") for op in OPERATORS},
                "eq": {"anyOf": [_ref("scalar"), {"type": "array", "maxItems": MAX_LIST, "items": _ref("scalar")}]},
                "in": _ref("value_list"),
                "contains_any": _ref("value_list"),
                "contains_all": _ref("value_list"),
                "exists": {"type": "boolean"},
            },
        },
        "where": {"type": "object", "propertyNames": _ref("name"), "additionalProperties": _ref("conditions")},
        "order_by": {
            "type": "array",
            "maxItems": MAX_PROJECTIONS,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["field"],
                "properties": {"field": _ref("name"), "direction": {"enum": ["asc", "desc"], "default": "asc"}},
            },
        },
        "fence": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "tag": {**_ref("name"), "default": "records"},
                "preamble": {"type": ["string", "null"], "pattern": _NON_BLANK_PATTERN},
            },
        },
        "rerank": {
            "type": ["object", "null"],
            "additionalProperties": False,
            "properties": {
                "backend": {"enum": ["none", "llm_judge"], "default": "none"},
                "top_n": _integer(1, 20, default=20),
            },
        },
        "graph_boost": {
            "type": "object",
            "additionalProperties": False,
            "required": ["anchor"],
            "properties": {
                "anchor": {"type": "string", "pattern": _ANCHOR_PATTERN},
                "graph": _ref("name"),
                "depth": _integer(1, 4, default=2),
                "weight": {"type": "number", "exclusiveMinimum": 0, "maximum": 1, "default": 0.05},
                "limit": _integer(1, 100, default=100),
            },
        },
    },
}


def search_spec_schema(*, max_query_chars: int | None = None) -> dict:
    """A deep copy of ``SEARCH_SPEC_SCHEMA``; with ``max_query_chars`` it also bounds ``q``'s
    length, as a deployment's ``MAX_QUERY_CHARS`` does."""
    schema = copy.deepcopy(SEARCH_SPEC_SCHEMA)
    if max_query_chars is not None:
        schema["properties"]["q"]["maxLength"] = max_query_chars
    return schema
