"""The SDK's result models cannot drift from the API: each route's success schema in the
OpenAPI document the server generates is compared member by member with its model (names,
required ⇔ no default, nullable ⇔ ``None`` allowed, JSON type ⇔ Python type), nested models
included. Routes this server does not list yet (other branches add them) are skipped, saying so."""
from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any

import pytest
from drf_spectacular.generators import SchemaGenerator

from memseek_client import models as m
from memseek_client.decode import json_name

ROUTES = [
    ("GET", "/health", m.Health), ("POST", "/records", m.IngestResult), ("GET", "/records/{id}", m.Record),
    ("POST", "/records/{id}/approve", m.ReviewResult), ("POST", "/records/{id}/reject", m.ReviewResult),
    ("GET", "/timeline", m.TimelinePage), ("GET", "/document", m.Document),
    ("GET", "/document/history", m.DocumentHistory), ("GET", "/collections", m.CollectionList),
    ("POST", "/search", m.SearchResponse), ("GET", "/search", m.SearchResponse), ("GET", "/views", m.ViewList),
    ("POST", "/views/{name}/query", m.ViewQueryResult), ("GET", "/rank/schema", m.RankSchema),
    ("GET", "/context", m.ContextResponse), ("POST", "/retrieve", m.MemoryContext),
    ("GET", "/receipts/{id}", m.Receipt), ("POST", "/receipts/{id}/feedback", m.Feedback),
    ("POST", "/evaluate", m.Evaluation), ("POST", "/search/lexical", m.LexicalResponse),
    ("POST", "/memory/search", m.Brief), ("GET", "/memory/grep", m.MemoryGrep),
    ("GET", "/memory/latest", m.MemoryLatest), ("GET", "/memory/around", m.MemoryAround),
    ("GET", "/memory/read", m.MemoryRead), ("GET", "/memory/ls", m.MemoryLs),
    ("GET", "/memory/history", m.MemoryHistory), ("GET", "/tools", m.ToolList), ("POST", "/import", m.ImportResult),
]
REQUESTS = [("POST", "/records", m.RecordInput, ("records", "items"))]
JSON_TYPES = {"string": str, "integer": int, "number": float, "boolean": bool}


@pytest.fixture(scope="module")
def document() -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)


def _operation(document: dict, method: str, path: str) -> dict:
    operation = document["paths"].get(path, {}).get(method.lower())
    if operation is None:
        pytest.skip(f"this server's OpenAPI document does not list {method} {path} yet")
    return operation


def _resolve(document: dict, schema: dict) -> dict:
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    if "allOf" in schema and len(schema["allOf"]) == 1:
        return _resolve(document, {**schema["allOf"][0], **{k: v for k, v in schema.items() if k != "allOf"}})
    return schema


def _without_none(hint):
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        options = [option for option in typing.get_args(hint) if option is not type(None)]
        return options[0], True
    return hint, False


def _problems(document: dict, model, schema: dict, where: str) -> list[str]:
    schema = _resolve(document, schema)
    properties, required = schema.get("properties", {}), set(schema.get("required", ()))
    hints = typing.get_type_hints(model)
    fields = {json_name(field): field for field in dataclasses.fields(model)}
    problems = [f"{where}.{name}: in the schema, not in {model.__name__}" for name in properties if name not in fields]
    for name, field in fields.items():
        newer = field.metadata.get("newer", False)
        if name not in properties:
            if not newer:
                problems.append(f"{where}.{name}: in {model.__name__}, not in the schema")
            continue
        has_default = field.default is not dataclasses.MISSING
        if not newer and has_default == (name in required):
            problems.append(f"{where}.{name}: required is {name in required} but the model default is {has_default}")
        # A member newer than some servers is None when absent, however the schema requires it.
        problems += _type_problems(document, hints[field.name], properties[name], name in required and not newer,
                                   f"{where}.{name}")
    return problems


def _nullable(document: dict, schema: dict) -> tuple[dict, bool]:
    """``schema`` without its null alternative, and whether it had one: OpenAPI 3.1 spells a
    nullable member ``type: [T, "null"]``, or ``oneOf: [<T>, {type: null}]`` for a reference."""
    kind = schema.get("type")
    if isinstance(kind, list) and "null" in kind:
        others = [name for name in kind if name != "null"]
        return {**schema, "type": others[0] if len(others) == 1 else others}, True
    for combinator in ("oneOf", "anyOf"):
        options = schema.get(combinator)
        if options and {"type": "null"} in options:
            others = [option for option in options if option != {"type": "null"}]
            if len(others) == 1:
                return _resolve(document, others[0]), True
    return schema, bool(schema.get("nullable"))


def _type_problems(document: dict, hint, schema: dict, required: bool, where: str) -> list[str]:
    if hint is Any:
        return []
    schema, nullable = _nullable(document, _resolve(document, schema))
    inner, optional = _without_none(hint)
    if optional != (nullable or not required):
        return [f"{where}: None allowed is {optional}, schema nullable={nullable} required={required}"]
    kind = schema.get("type")
    if dataclasses.is_dataclass(inner):
        return _problems(document, inner, schema, where)
    if typing.get_origin(inner) is tuple:
        if kind != "array":
            return [f"{where}: a tuple in the model, {kind} in the schema"]
        return _type_problems(document, typing.get_args(inner)[0], schema.get("items", {}), True, f"{where}[]")
    if typing.get_origin(inner) is Mapping:
        if kind != "object":
            return [f"{where}: a mapping in the model, {kind} in the schema"]
        values = schema.get("additionalProperties")
        return _type_problems(document, typing.get_args(inner)[1], values, True, f"{where}{{}}") \
            if isinstance(values, dict) and values else []
    if JSON_TYPES.get(kind) is not inner:
        return [f"{where}: {inner} in the model, {kind} in the schema"]
    return []


@pytest.mark.parametrize(("method", "path", "model"), ROUTES, ids=[f"{r[0]} {r[1]}" for r in ROUTES])
def test_each_result_model_matches_its_routes_success_schema(document, method, path, model):
    responses = _operation(document, method, path)["responses"]
    status = next(code for code in responses if code.startswith("2"))
    schema = responses[status]["content"]["application/json"]["schema"]
    assert _problems(document, model, schema, f"{method} {path}") == []


@pytest.mark.parametrize(("method", "path", "model", "members"), REQUESTS, ids=[f"{r[0]} {r[1]}" for r in REQUESTS])
def test_each_request_model_matches_its_routes_request_schema(document, method, path, model, members):
    schema = _resolve(document, _operation(document, method, path)["requestBody"]["content"]["application/json"]
                      ["schema"])
    for member in members:
        schema = _resolve(document, schema["properties"][member] if member != "items" else schema["items"])
    fields = {json_name(field) for field in dataclasses.fields(model)}
    assert fields == set(schema["properties"])
    required = {json_name(field) for field in dataclasses.fields(model) if field.default is dataclasses.MISSING}
    assert required == set(schema.get("required", ()))


def test_the_comparison_catches_a_drifted_model(document):
    """The check itself can fail: a model missing a member, or with a wrong type, is reported."""

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Drifted:
        ok: str
        extra: int

    schema = _operation(document, "GET", "/health")["responses"]["200"]["content"]["application/json"]["schema"]
    problems = _problems(document, Drifted, schema, "GET /health")
    assert any(".db: in the schema" in problem for problem in problems)
    assert any(".extra: in Drifted" in problem for problem in problems)
    assert any(".ok:" in problem and "boolean" in problem for problem in problems)
