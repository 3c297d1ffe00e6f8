"""The transport rules of every request (``json_body`` and ``query_text``) in the OpenAPI document.

Every string the API reads (body values, object keys, query parameters) may not hold U+0000 or a
lone surrogate, and every integer is a PostgreSQL bigint; ``json_body`` refuses the rest before
any route runs. This drf-spectacular postprocessing hook writes those rules into every schema a
request reaches, from the same constants, so no route has to restate them and the document
admits nothing the transport layer refuses.
"""
from __future__ import annotations

from .json_body import BIGINT_MAX, BIGINT_MIN

# Every character but U+0000. A lone surrogate (json_body refuses it too) is not a Unicode
# character, so no JSON Schema string holds one; a class naming the surrogate range would only
# confuse generators (schemathesis then produced strings outside the pattern).
STORABLE_TEXT = "^[^\\u0000]*$"
# Marks a query parameter whose value must come from an earlier response (a cursor naming an entry
# of the listing the other parameters select); no schema can say which values those are.
ISSUED_BY_SERVER = "x-issued-by-server"
# An operation's rules between its query parameters, which OpenAPI parameters cannot state one by
# one: a JSON Schema over the object of the query's parameters (``dependentRequired``, ...).
QUERY_RULES = "x-query-rules"
_HTTP_METHODS = ("get", "put", "post", "patch", "delete", "head", "options", "trace")
# Any JSON value json_body stores: the schema of a request member the document leaves open (a
# record's content, client scores and annotations, view parameters).
STORABLE_JSON = "StorableJSON"
_STORABLE_JSON_SCHEMA = {
    "description": "Any JSON value without U+0000 in a string or key, integers within bigint.",
    "type": ["object", "array", "string", "integer", "number", "boolean", "null"],
    "items": {"$ref": f"#/components/schemas/{STORABLE_JSON}"},
    "additionalProperties": {"$ref": f"#/components/schemas/{STORABLE_JSON}"},
}
# The envelope of 429 rate_limited (catalog_app.throttle): the Error envelope and what was passed.
RATE_LIMITED_ERROR = "RateLimitedError"
_RATE_LIMITED_SCHEMA = {
    "type": "object", "required": ["error", "detail", "retry_after_s", "scope", "route_class", "limit"],
    "properties": {
        "error": {"type": "string", "enum": ["rate_limited"]},
        "detail": {"type": "string", "description": "What was passed and what to do instead."},
        "retry_after_s": {"type": "integer", "minimum": 1, "description": "As the Retry-After header."},
        "scope": {"type": "string", "enum": ["key", "workspace"],
                  "description": "Whose rate was passed: the key's or its workspace's."},
        "route_class": {"type": "string", "enum": ["read", "search", "bulk"]},
        "limit": {"type": "string", "description": "The rate passed, as COUNT/PERIOD (10/s, 600/m, 5/10s)."},
    },
}
_RETRY_AFTER_HEADER = {"description": "Whole seconds to wait before sending the request again.",
                       "schema": {"type": "integer", "minimum": 1}}
_ANY_VALUE_KEYS = {"description", "title", "default", "examples", "readOnly", "writeOnly", "deprecated"}


def postprocess_transport_rules(result, generator, **kwargs):
    components = result.setdefault("components", {}).setdefault("schemas", {})
    components[STORABLE_JSON] = _STORABLE_JSON_SCHEMA
    components[RATE_LIMITED_ERROR] = _RATE_LIMITED_SCHEMA
    seen: set[int] = set()
    for path_item in result.get("paths", {}).values():
        for method in _HTTP_METHODS:
            operation = path_item.get(method)
            if operation is None:
                continue
            _document_transport_answers(operation)
            for parameter in operation.get("parameters", []):
                if parameter.get("in") in ("query", "path") and "schema" in parameter:
                    _apply(parameter["schema"], components, seen)
            body = operation.get("requestBody")
            if body is not None:
                # A body is one JSON document: an empty one is 422 invalid_json.
                body["required"] = True
                for media in body.get("content", {}).values():
                    if "schema" in media:
                        media["schema"] = _open_values_storable(media["schema"])
                        _apply(media["schema"], components, seen)
    return result


def _document_transport_answers(operation: dict) -> None:
    """Every route may answer an over-long URL (414 uri_too_long), a request past its deadline
    (503 deadline_exceeded, ``memseek_site.deadline``) and, when it takes a body, an over-large
    one (413 body_too_large), or, when it takes query parameters, a query string that is not
    UTF-8 (400 invalid_encoding); a route that takes a key may answer its key's or workspace's
    rate limit (429 rate_limited, with Retry-After) and a bad stored limit setting (409
    workspace_setting; ``catalog_app.throttle``). Say so where it does not already."""
    answers = operation.setdefault("responses", {})
    envelope = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    answers.setdefault("414", {**envelope, "description": "uri_too_long: the request target passes MAX_URL_BYTES."})
    if "requestBody" in operation:
        _add_answer(answers, "413", envelope, "body_too_large: the body passes MAX_BODY_BYTES.")
    if operation.get("security"):
        limited = {"content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{RATE_LIMITED_ERROR}"}}}}
        _add_answer(answers, "429", limited, "rate_limited: the key or its workspace sent more requests of this "
                                              "route's class (read, search or bulk) than its rate allows; nothing "
                                              "was done, send it again after Retry-After seconds (also the "
                                              "envelope's retry_after_s).")
        answers["429"].setdefault("headers", {})["Retry-After"] = _RETRY_AFTER_HEADER
        _add_answer(answers, "409", envelope, "workspace_setting: a limit stored in the workspace's settings "
                                              "(limits.*) fails its check.")
    if any(parameter.get("in") == "query" for parameter in operation.get("parameters", [])):
        _add_answer(answers, "400", envelope, "invalid_encoding: the query string is not UTF-8.")
    _add_answer(answers, "503", envelope, "deadline_exceeded: the request ran past its route class's deadline "
                                          "(REQUEST_DEADLINE_MS and its overrides); retry after Retry-After.")


def _add_answer(answers: dict, status: str, envelope: dict, description: str) -> None:
    """``status`` documented with ``description``, added to the one already there if any."""
    answer = answers.setdefault(status, {**envelope, "description": ""})
    if description not in answer.get("description", ""):
        answer["description"] = f"{answer['description']} {description}".strip()


def _apply(schema, components: dict, seen: set[int]) -> None:
    """Add the rules to ``schema`` and everything it reaches (``$ref``s into ``components``)."""
    if isinstance(schema, list):
        for item in schema:
            _apply(item, components, seen)
        return
    if not isinstance(schema, dict) or id(schema) in seen:
        return
    seen.add(id(schema))
    for key in ("properties", "patternProperties"):
        for name, member in schema.get(key, {}).items():
            schema[key][name] = _open_values_storable(member)
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            schema[key] = _open_values_storable(schema[key])
    reference = schema.get("$ref", "")
    if reference.startswith("#/components/schemas/"):
        _apply(components.get(reference.removeprefix("#/components/schemas/")), components, seen)
    types = schema.get("type")
    types = set(types) if isinstance(types, list) else {types}
    if "string" in types and "enum" not in schema and "const" not in schema:
        _require_pattern(schema, STORABLE_TEXT)
    if "integer" in types:
        schema["minimum"] = max(schema.get("minimum", BIGINT_MIN), BIGINT_MIN)
        schema["maximum"] = min(schema.get("maximum", BIGINT_MAX), BIGINT_MAX)
    if "object" in types and schema.get("additionalProperties") is not False:
        # An open object's other members are values json_body stores, like any other.
        schema.setdefault("additionalProperties", {"$ref": f"#/components/schemas/{STORABLE_JSON}"})
        names = schema.setdefault("propertyNames", {})
        if isinstance(names, dict):
            _require_pattern(names, STORABLE_TEXT)
    for key, value in schema.items():
        if key in ("properties", "patternProperties", "$defs", "dependentSchemas"):
            for member in value.values():
                _apply(member, components, seen)
        elif isinstance(value, (dict, list)) and key not in ("enum", "const", "examples", "default", "required"):
            _apply(value, components, seen)


def _open_values_storable(schema):
    """``schema`` itself, or where it admits any value, that value as ``STORABLE_JSON``."""
    if isinstance(schema, dict) and set(schema) <= _ANY_VALUE_KEYS:
        return {**schema, "$ref": f"#/components/schemas/{STORABLE_JSON}"}
    return schema


def _require_pattern(schema: dict, pattern: str) -> None:
    if "pattern" not in schema:
        schema["pattern"] = pattern
    elif schema["pattern"] != pattern and {"pattern": pattern} not in schema.get("allOf", []):
        schema.setdefault("allOf", []).append({"pattern": pattern})
