"""Validation of record content and client annotations: the types of a collection's declared
content fields, and JSON Schema (Draft 2020-12), both with ``date-time`` enforced as an RFC 3339
timestamp that carries a timezone."""
from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable
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


def schema_validator(schema) -> jsonschema.Draft202012Validator:
    """The validator of the JSON Schema mapping ``schema`` (a ``MappingProxyType`` of a compiled
    catalog or a dict), shared by every equal schema. Compiling one is slow next to validating
    one value, so a caller that validates many values keeps the validator it gets here."""
    return _validator(json.dumps(dict(schema), sort_keys=True))


@functools.lru_cache(maxsize=256)
def _validator(schema_json: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads(schema_json), format_checker=_FORMATS)


def first_schema_error(validator: jsonschema.Draft202012Validator, value) -> tuple[str, str] | None:
    """Return ``(dotted path inside value, message)`` of the first violation of the schema of
    ``validator`` (from ``schema_validator``), or None."""
    error = next(iter(sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))), None)
    if error is None:
        return None
    path = ".".join(str(part) for part in error.absolute_path)
    return path, error.message
