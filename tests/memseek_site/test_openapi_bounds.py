"""Every number a request sends that sizes work is bounded in the OpenAPI document: walking every
operation's query parameters and body, each integer has a maximum below the transport's bigint
ceiling and each array a ``maxItems``, except the members listed in ``NOT_SIZING_WORK`` with why.
A new unbounded integer or list anywhere in the API fails here until it has a bound or a reason;
the server refusing past each bound is tested beside each reader (test_spec, test_openapi_constraints,
the route tests)."""
from __future__ import annotations

import functools

from drf_spectacular.generators import SchemaGenerator

from memseek_site.json_body import BIGINT_MAX
from memseek_site.openapi import STORABLE_JSON

# Where the walk stops: an open JSON value (bounded by MAX_BODY_BYTES and its member's own size
# setting) and the rank grammar (at most MAX_DEPTH levels and MAX_NODES nodes, a rule stated in the
# SearchSpec's x-parser-only-rules).
OPAQUE = {STORABLE_JSON: "open value", "RankExpression": "rank tree"}
# Members that name or select something rather than size work, and open values with the setting
# that bounds them.
NOT_SIZING_WORK = {
    "GET /timeline ?before_seq": "a cursor (a seq the previous page ended at)",
    "GET /document/history ?before_seq": "a cursor",
    "POST /records body.records[].collection_version": "names a collection version",
    "POST /records body.records[].content.*": "open value within MAX_CONTENT_BYTES",
    "POST /records body.records[].annotations.*": "open value within MAX_ANNOTATION_BYTES",
    "POST /search body.scope.collection_versions.*[]": "names a collection version",
    "POST /search body.sources[].scope.collection_versions.*[]": "names a collection version",
    "POST /search/lexical body.scope.collection_versions.*[]": "names a collection version",
    "POST /search body.scope.depth_lte": "a filter: narrows the candidates",
    "POST /search body.sources[].scope.depth_lte": "a filter",
    "POST /search/lexical body.scope.depth_lte": "a filter",
    "POST /search body.rank": "rank tree",
    "POST /search body.boost": "rank tree",
    "POST /search body.sources[].rank": "rank tree",
    "POST /mcp body.id": "a JSON-RPC request id",
    "POST /mcp body.error.code": "a JSON-RPC error code",
    "POST /mcp body.params.*": "open value: a tool call's arguments are the called route's body, bounded there",
    "POST /mcp body.result.*": "open value: a client's answer to the server, read by no route",
    "POST /mcp body.error.*": "open value: a client's error data, read by no route",
    "POST /views/{name}/query body.*": "view parameters, bounded by the view's declared parameters",
    "POST /views/{name}/query body.parameter": "a view parameter, bounded by its declaration",
    "POST /evaluate body.queries[].parameters.*": "view parameters, bounded by the view's declared parameters",
    "POST /evaluate body.target.parameters.*": "view parameters, bounded by the view's declared parameters",
}


@functools.cache
def document() -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)


def _numbers(schema, where: str, components: dict, seen: frozenset = frozenset()):
    """``(where, what, bounded)`` of every integer and array under ``schema``, and of every opaque
    member (never bounded); conditions (``if``, ``not``) are not inputs and are not walked."""
    if not isinstance(schema, dict):
        return
    reference = schema.get("$ref", "").removeprefix("#/components/schemas/")
    if reference:
        if reference in OPAQUE or reference.split(".")[0] in OPAQUE:
            yield where, OPAQUE.get(reference, OPAQUE.get(reference.split(".")[0])), False
        elif reference not in seen:
            yield from _numbers(components[reference], where, components, seen | {reference})
        return
    types = schema.get("type")
    types = set(types) if isinstance(types, list) else {types}
    if "integer" in types and "const" not in schema:
        yield where, "integer", schema.get("maximum", BIGINT_MAX) < BIGINT_MAX
    if "array" in types:
        yield where, "array", "maxItems" in schema
    for name, member in schema.get("properties", {}).items():
        yield from _numbers(member, f"{where}.{name}", components, seen)
    if isinstance(schema.get("items"), dict):
        yield from _numbers(schema["items"], f"{where}[]", components, seen)
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _numbers(schema["additionalProperties"], f"{where}.*", components, seen)
    for key in ("allOf", "anyOf", "oneOf"):
        for branch in schema.get(key, []):
            yield from _numbers(branch, where, components, seen)
    for key in ("then", "else"):
        if isinstance(schema.get(key), dict):
            yield from _numbers(schema[key], where, components, seen)


def _request_members():
    doc = document()
    components = doc["components"]["schemas"]
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            label = f"{method.upper()} {path}"
            for parameter in operation.get("parameters", []):
                yield from _numbers(parameter.get("schema", {}), f"{label} ?{parameter['name']}", components)
            for media in operation.get("requestBody", {}).get("content", {}).values():
                yield from _numbers(media.get("schema", {}), f"{label} body", components)


def test_every_request_number_that_sizes_work_has_a_bound_in_the_document(db):
    unbounded = {where: what for where, what, bounded in _request_members() if not bounded}
    assert not {where: what for where, what in unbounded.items() if where not in NOT_SIZING_WORK}
    # Every exception still names a member of the document (none outlives its member).
    assert set(NOT_SIZING_WORK) <= set(unbounded), set(NOT_SIZING_WORK) - set(unbounded)


def test_the_walk_reaches_nested_members_and_reads_their_bounds(db):
    found = {where: bounded for where, _, bounded in _request_members()}
    for member in ("POST /search body.k", "POST /search body.sources[].k", "POST /search body.sources[].order_by",
                   "POST /evaluate body.queries", "POST /evaluate body.queries[].relevant.*",
                   "GET /memory/around ?before",
                   "POST /search/lexical body.query.scan_limit", "POST /records body.records",
                   "POST /records body.records[].derived_from", "POST /receipts/{id}/feedback body.recordIds"):
        assert found.get(member) is True, (member, found.get(member))
