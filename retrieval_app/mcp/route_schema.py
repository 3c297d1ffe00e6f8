"""A route's input and output contracts as JSON Schema objects, read from the service's own
OpenAPI document (drf-spectacular, OpenAPI 3.1, whose schemas are JSON Schema 2020-12), so a
tool's arguments and its ``structuredContent`` are exactly what its REST route documents.

Path and query parameters become properties (required ones listed); a JSON request body's
properties are merged in. ``$ref``s are inlined, so each schema stands alone. The document is
generated once per process. A route the document does not have (one not deployed in this
build) answers ``None``.
"""
from __future__ import annotations

import copy
import threading

_lock = threading.Lock()
_document: dict | None = None


def _openapi() -> dict:
    global _document
    with _lock:
        if _document is None:
            from drf_spectacular.generators import SchemaGenerator

            _document = SchemaGenerator().get_schema(request=None, public=True)
        return _document


def route_input_schema(method: str, template: str, *, fixed: tuple[str, ...] = ()) -> dict | None:
    """The arguments of ``method template`` (``template`` as the OpenAPI document spells it,
    ``/records/{id}``), without the parameters named in ``fixed`` (the tool fills those)."""
    document = _openapi()
    operation = document.get("paths", {}).get(template, {}).get(method.lower())
    if operation is None:
        return None
    properties, required = {}, []
    for parameter in operation.get("parameters", []):
        if parameter["in"] not in ("path", "query") or parameter["name"] in fixed:
            continue
        schema = _inlined(parameter.get("schema", {}), document)
        if parameter.get("description"):
            schema = {**schema, "description": parameter["description"]}
        properties[parameter["name"]] = schema
        if parameter.get("required"):
            required.append(parameter["name"])
    body = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if body is not None:
        schema = _inlined(body["schema"], document)
        properties.update(schema.get("properties", {}))
        required.extend(name for name in schema.get("required", []) if name not in required)
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def route_output_schema(method: str, template: str, document: dict | None = None) -> dict | None:
    """The JSON body ``method template`` answers on success (its first documented 2xx with an
    ``application/json`` schema), references inlined; ``None`` when the document has none.
    ``document``: another OpenAPI document to read it from (the checked-in one), else this
    build's."""
    document = _openapi() if document is None else document
    operation = document.get("paths", {}).get(template, {}).get(method.lower())
    if operation is None:
        return None
    for status, response in sorted(operation.get("responses", {}).items()):
        body = response.get("content", {}).get("application/json")
        if status.startswith("2") and body is not None and "schema" in body:
            return _inlined(body["schema"], document)
    return None


def route_exists(template: str) -> bool:
    """Whether this build serves ``template`` (``/memory/grep``)."""
    return template in _openapi().get("paths", {})


def _inlined(schema, document: dict, depth: int = 0):
    """``schema`` with every ``#/components/...`` reference replaced by its target."""
    if depth > 32:
        raise ValueError("the OpenAPI document nests references more than 32 deep")
    if isinstance(schema, dict):
        if "$ref" in schema and len(schema) == 1:
            target = document
            for part in schema["$ref"].removeprefix("#/").split("/"):
                target = target[part]
            return _inlined(copy.deepcopy(target), document, depth + 1)
        return {key: _inlined(value, document, depth + 1) for key, value in schema.items() if key != "readOnly"}
    if isinstance(schema, list):
        return [_inlined(item, document, depth + 1) for item in schema]
    return schema

