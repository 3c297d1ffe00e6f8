"""Validation of record content and client annotations: the types of a collection's declared
content fields, and JSON Schema (Draft 2020-12), both with ``date-time`` enforced as an RFC 3339
timestamp that carries a timezone.

A schema written only with the common keywords (``_conformance``) also gets a plain predicate
that holds exactly when jsonschema finds no error, so a valid value (nearly every one) is not
walked by the validator at all; jsonschema still reports every error.
"""
from __future__ import annotations

import functools
import json
import math
import operator
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

import jsonschema

from memseek_site.parsing import type_name

from ..catalog.collections import DeclaredField

_FORMATS = jsonschema.FormatChecker(formats=())


@_FORMATS.checks("date-time", raises=ValueError)
def _is_datetime(value) -> bool:
    if not isinstance(value, str):
        return True  # the type keyword reports non-strings
    if "T" not in value and "t" not in value:
        raise ValueError("a date-time needs a T between date and time")
    parsed = datetime.fromisoformat(value[:-1] + "+00:00" if value[-1] in "Zz" else value)
    if parsed.utcoffset() is None:
        raise ValueError("a date-time needs a timezone")
    return True


def first_field_type_error(fields: Iterable[DeclaredField], content: dict) -> tuple[str, str] | None:
    """Return ``(path inside content, message)`` of the first declared ``content.*`` field
    (declaration order) whose value has the wrong type, or None. An absent or null value
    passes: whether a value must be present is the schema's rule."""
    for field in fields:
        if field.path[0] != "content":
            continue  # annotation fields are checked against their processor's output schema
        value = content
        for part in field.path[1:]:
            value = value.get(part) if isinstance(value, dict) else None
        if value is None:
            continue
        path = ".".join(field.path[1:])
        declared = f"[{field.type}]" if field.is_array else field.type
        if not field.is_array:
            items = [(path, value)]
        elif isinstance(value, list):
            items = [(f"{path}[{index}]", item) for index, item in enumerate(value)]
        else:
            return path, f"expected a list, got {type_name(value)} (field {field.name} is {declared})"
        for where, item in items:
            problem = _type_problem(item, field.type)
            if problem is not None:
                return where, f"{problem} (field {field.name} is {declared})"
    return None


def _type_problem(value, declared: str) -> str | None:
    if declared == "datetime":
        if not isinstance(value, str):
            return f"expected a date-time string, got {type_name(value)}"
        try:
            _is_datetime(value)
        except ValueError:
            return f"{value!r} is not an RFC 3339 date-time with a timezone"
        return None
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    matches = {"string": isinstance(value, str), "boolean": isinstance(value, bool),
               "number": number and math.isfinite(value),
               "integer": number and (isinstance(value, int) or value.is_integer())}[declared]
    return None if matches else f"expected {'an' if declared == 'integer' else 'a'} {declared}, got {type_name(value)}"


@dataclass(frozen=True, slots=True)
class SchemaCheck:
    """A JSON Schema's validator and, when ``_conformance`` knows every keyword of the schema, a
    predicate that is true exactly when the validator finds no error in a value."""

    validator: jsonschema.Draft202012Validator
    conforms: Callable[[object], bool] | None


def schema_check(schema) -> SchemaCheck:
    """The check of the JSON Schema mapping ``schema`` (a ``MappingProxyType`` of a compiled
    catalog or a dict), shared by every equal schema. Compiling one is slow next to validating
    one value, so a caller that validates many values keeps the check it gets here."""
    return _check(json.dumps(dict(schema), sort_keys=True))


@functools.lru_cache(maxsize=256)
def _check(schema_json: str) -> SchemaCheck:
    schema = json.loads(schema_json)
    return SchemaCheck(jsonschema.Draft202012Validator(schema, format_checker=_FORMATS), _conformance(schema))


def first_schema_error(check: SchemaCheck, value) -> tuple[str, str] | None:
    """Return ``(dotted path inside value, message)`` of the first violation of the schema of
    ``check`` (from ``schema_check``), or None."""
    if check.conforms is not None and check.conforms(value):
        return None
    error = next(iter(sorted(check.validator.iter_errors(value), key=lambda e: list(e.absolute_path))), None)
    if error is None:
        return None
    path = ".".join(str(part) for part in error.absolute_path)
    return path, error.message


# Draft 2020-12's type names, as jsonschema's type checker reads them (a bool is no number, an
# integral float is an integer).
_TYPES: dict[str, Callable[[object], bool]] = {
    "object": lambda value: isinstance(value, dict),
    "array": lambda value: isinstance(value, list),
    "string": lambda value: isinstance(value, str),
    "boolean": lambda value: isinstance(value, bool),
    "null": lambda value: value is None,
    "number": lambda value: isinstance(value, (int, float)) and not isinstance(value, bool),
    "integer": lambda value: not isinstance(value, bool) and (
        isinstance(value, int) or isinstance(value, float) and value.is_integer()),
}
_ANNOTATIONS = frozenset({"title", "description", "$comment", "examples", "default", "deprecated", "readOnly",
                          "writeOnly"})
_KEYWORDS = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties", "items", "enum", "minimum",
                            "maximum", "format"}


def _conformance(schema) -> Callable[[object], bool] | None:
    """A predicate over decoded JSON values that is true exactly when ``schema`` (a valid Draft
    2020-12 schema) holds for the value, or None when the schema uses a keyword (or a form of
    one) outside this subset: the type names, ``properties``, ``required``,
    ``additionalProperties``, ``items`` (one schema), an ``enum`` of strings, numeric
    ``minimum``/``maximum``, ``format`` (only ``date-time`` is checked, as ``_FORMATS`` does) and
    annotations."""
    if isinstance(schema, bool):
        return lambda value: schema
    if not isinstance(schema, dict) or not schema.keys() <= _KEYWORDS:
        return None
    checks: list[Callable[[object], bool]] = []
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not all(name in _TYPES for name in names):
            return None
        kinds = [_TYPES[name] for name in names]
        checks.append(lambda value: any(kind(value) for kind in kinds))
    if "enum" in schema:
        if not all(isinstance(member, str) for member in schema["enum"]):
            return None
        members = frozenset(schema["enum"])
        checks.append(lambda value: isinstance(value, str) and value in members)
    for keyword, holds in (("minimum", operator.ge), ("maximum", operator.le)):
        if keyword in schema:
            bound = schema[keyword]
            if isinstance(bound, bool) or not isinstance(bound, (int, float)):
                return None
            checks.append(lambda value, bound=bound, holds=holds: not _TYPES["number"](value) or holds(value, bound))
    if schema.get("format") == "date-time":
        checks.append(_is_rfc3339)
    if "required" in schema:
        required = tuple(schema["required"])
        checks.append(lambda value: not isinstance(value, dict) or all(name in value for name in required))
    properties = {}
    for name, subschema in schema.get("properties", {}).items():
        properties[name] = _conformance(subschema)
        if properties[name] is None:
            return None
    if properties:
        pairs = tuple(properties.items())
        checks.append(lambda value: not isinstance(value, dict)
                      or all(name not in value or holds(value[name]) for name, holds in pairs))
    if "additionalProperties" in schema:
        extra = _conformance(schema["additionalProperties"])
        if extra is None:
            return None
        checks.append(lambda value: not isinstance(value, dict)
                      or all(name in properties or extra(member) for name, member in value.items()))
    if "items" in schema:
        item = _conformance(schema["items"])
        if item is None:
            return None
        checks.append(lambda value: not isinstance(value, list) or all(item(member) for member in value))
    every = tuple(checks)
    return lambda value: all(check(value) for check in every)


def _is_rfc3339(value) -> bool:
    try:
        return _is_datetime(value)
    except ValueError:
        return False
