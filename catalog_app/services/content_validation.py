"""JSON Schema validation of record content and client annotations (Draft 2020-12), with
``date-time`` enforced as an RFC 3339 timestamp that carries a timezone."""
from __future__ import annotations

import functools
import json
from datetime import datetime

import jsonschema

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


@functools.lru_cache(maxsize=256)
def _validator(schema_json: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads(schema_json), format_checker=_FORMATS)


def first_schema_error(schema, value) -> tuple[str, str] | None:
    """Return ``(dotted path inside value, message)`` of the first violation, or None."""
    validator = _validator(json.dumps(schema, sort_keys=True))
    error = next(iter(sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))), None)
    if error is None:
        return None
    path = ".".join(str(part) for part in error.absolute_path)
    return path, error.message
