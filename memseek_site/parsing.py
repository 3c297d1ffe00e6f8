"""The strict readers: one set of functions that check a raw value and return it parsed.

Every reader takes the raw value and its dotted path, returns the parsed value, and raises
``error(code, message, path)``: by default a ``RequestError`` with code ``request_schema``; the
SearchSpec parser, the catalog validators and the workspace settings pass their own error class
(whose ``default_code`` applies) so a problem is raised once, as what it is. Unknown keys are
errors, never ignored. Parsers for whole documents build frozen dataclasses from these pieces.
"""
from __future__ import annotations

import math
import re
import uuid
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone

from .errors import ApiError, RequestError

PUBLIC_NAME = re.compile(r"^[a-z][a-z0-9._-]{0,63}$")


# --- The JSON Schema of what the readers accept, for the OpenAPI document -------------------------
# Each helper states one reader's rule as a schema, beside the reader, so a route documents the
# limits it passes to the reader instead of restating them.

# The characters str.strip() removes (what ``parse_string`` calls blank): Python's ``\s`` holds
# them all; ECMA-262's lacks U+001C-U+001F and U+0085, so they are named too.
STRIP_SPACE = r"\s\x1c-\x1f\x85"
NON_BLANK = f"[^{STRIP_SPACE}]"
_END = r"(?![\s\S])"  # end of string in Python and ECMA-262 alike ($ also matches before a final newline)


def schema_pattern(pattern: re.Pattern) -> str:
    """``pattern`` as a JSON Schema pattern that, like the reader's ``fullmatch``, refuses a
    trailing newline (``$`` alone matches before one)."""
    return pattern.pattern.removesuffix("$") + _END


def string_schema(*, max_length: int | None = None, pattern: re.Pattern | None = None,
                  allow_blank: bool = False, **extra) -> dict:
    """What ``parse_string`` accepts with these arguments."""
    schema: dict = {"type": "string", **extra}
    if pattern is not None:
        schema["pattern"] = schema_pattern(pattern)
    elif not allow_blank:
        schema["pattern"] = NON_BLANK
    if max_length is not None:
        schema["maxLength"] = max_length
    return schema


def int_schema(*, minimum: int | None = None, maximum: int | None = None, **extra) -> dict:
    """What ``parse_int`` (and ``query_int``) accepts with these bounds."""
    schema: dict = {"type": "integer", **extra}
    if minimum is not None:
        schema["minimum"] = minimum
    if maximum is not None:
        schema["maximum"] = maximum
    return schema


def query_list_schema(pattern: re.Pattern, *, max_items: int = 100, **extra) -> dict:
    """What ``query_list`` accepts: 1 to ``max_items`` comma-separated names matching ``pattern``
    (surrounding whitespace and empty items ignored)."""
    name = pattern.pattern.removeprefix("^").removesuffix("$")
    space = f"[{STRIP_SPACE}]"
    gaps = f"[{STRIP_SPACE},]*"
    return {"type": "string", **extra,
            "pattern": f"^{gaps}(?:{name}){space}*(?:,{gaps}(?:{name}){space}*){{0,{max_items - 1}}}{gaps}{_END}"}


def at(path: str, key: str | int) -> str:
    """The dotted path of ``key`` inside ``path`` (``records[2].content``)."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def fail(path: str, message: str, code: str | None = None, *, error: type[ApiError] = RequestError) -> ApiError:
    """The error ``error`` raises for ``path`` (``""``: the document itself, which the class names
    by its ``root_path``); ``code`` defaults to the class's ``default_code``."""
    return error(code or error.default_code, message, path or error.root_path)


def parse_object(value, path: str, *, allowed: Iterable[str] | None = None, required: Iterable[str] = (),
                 code: str | None = None, error: type[ApiError] = RequestError) -> dict:
    """Return ``value`` as a dict with only ``allowed`` keys (``None``: any key) and every
    ``required`` key, checked in the order given."""
    if not isinstance(value, dict):
        raise fail(path, f"expected an object, got {type_name(value)}", code, error=error)
    if allowed is not None:
        allowed = set(allowed)
        for key in value:
            if key not in allowed:
                raise fail(at(path, key), f"unknown key {key!r}; allowed: {', '.join(sorted(allowed))}", code,
                           error=error)
    for key in required:
        if key not in value:
            raise fail(at(path, key), "is required", code, error=error)
    return value


def parse_string(value, path: str, *, max_length: int | None = None, pattern: re.Pattern | None = None,
                 allow_blank: bool = False, code: str | None = None, error: type[ApiError] = RequestError) -> str:
    if not isinstance(value, str):
        raise fail(path, f"expected a string, got {type_name(value)}", code, error=error)
    if not allow_blank and not value.strip():
        raise fail(path, "must not be blank", code, error=error)
    if max_length is not None and len(value) > max_length:
        raise fail(path, f"must be at most {max_length} characters, got {len(value)}", code, error=error)
    if pattern is not None and not pattern.fullmatch(value):
        raise fail(path, f"{value!r} does not match {pattern.pattern}", code, error=error)
    return value


def parse_int(value, path: str, *, minimum: int | None = None, maximum: int | None = None,
              code: str | None = None, error: type[ApiError] = RequestError) -> int:
    """An integer; a number with no fractional part (``5.0``) is one too, as JSON Schema (and so
    the OpenAPI document) counts it, and is returned as ``int``."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise fail(path, f"expected an integer, got {type_name(value)}", code, error=error)
    _check_range(value, path, minimum, maximum, code, error)
    return value


def parse_number(value, path: str, *, minimum: float | None = None, maximum: float | None = None,
                 code: str | None = None, error: type[ApiError] = RequestError) -> float:
    """A finite number (an integer too large for a float is not one), returned as a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise fail(path, f"expected a number, got {type_name(value)}", code, error=error)
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise fail(path, "must be a finite number", code, error=error)
    _check_range(number, path, minimum, maximum, code, error)
    return number


def _check_range(value, path: str, minimum, maximum, code: str | None, error: type[ApiError]) -> None:
    if minimum is not None and value < minimum:
        raise fail(path, f"must be at least {minimum}, got {value}", code, error=error)
    if maximum is not None and value > maximum:
        raise fail(path, f"must be at most {maximum}, got {value}", code, error=error)


def parse_bool(value, path: str, *, code: str | None = None, error: type[ApiError] = RequestError) -> bool:
    if not isinstance(value, bool):
        raise fail(path, f"expected true or false, got {type_name(value)}", code, error=error)
    return value


def parse_datetime(value, path: str, *, code: str | None = None, error: type[ApiError] = RequestError) -> datetime:
    """An ISO 8601 timestamp that carries a timezone (``Z`` or ``z`` for UTC), returned in UTC."""
    if not isinstance(value, str):
        raise fail(path, f"expected an ISO 8601 timestamp string, got {type_name(value)}", code, error=error)
    try:
        parsed = datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value)
    except ValueError:
        raise fail(path, f"{value!r} is not an ISO 8601 timestamp", code, error=error) from None
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise fail(path, f"{value!r} has no timezone; add Z or an offset such as +00:00", code, error=error)
    # In UTC: PostgreSQL stores offsets up to 15:59 only, Python's go to 23:59 (schemathesis sent
    # -16:06 and the scan's SQL failed with a 500).
    try:
        return parsed.astimezone(timezone.utc)
    except OverflowError:
        raise fail(path, f"{value!r} is outside years 1-9999 in UTC", code or "datetime_out_of_range",
                   error=error) from None


def parse_uuid(value, path: str, *, code: str | None = None, error: type[ApiError] = RequestError) -> uuid.UUID:
    if not isinstance(value, str):
        raise fail(path, f"expected a UUID string, got {type_name(value)}", code, error=error)
    try:
        return uuid.UUID(value)
    except ValueError:
        raise fail(path, f"{value!r} is not a UUID", code, error=error) from None


def parse_list(value, path: str, *, max_items: int | None = None, min_items: int = 0,
               code: str | None = None, error: type[ApiError] = RequestError) -> list:
    if not isinstance(value, list):
        raise fail(path, f"expected a list, got {type_name(value)}", code, error=error)
    if len(value) < min_items:
        raise fail(path, f"must hold at least {min_items} item(s)", code, error=error)
    if max_items is not None and len(value) > max_items:
        raise fail(path, f"must hold at most {max_items} items, got {len(value)}", code, error=error)
    return value


def parse_names(value, path: str, *, pattern: re.Pattern | None = PUBLIC_NAME, choices: Iterable[str] | None = None,
                max_items: int | None = None, code: str | None = None,
                error: type[ApiError] = RequestError) -> tuple[str, ...]:
    """A list of distinct non-blank strings, each matching ``pattern`` or one of ``choices``."""
    parse_list(value, path, max_items=max_items, code=code, error=error)
    choices = tuple(choices) if choices is not None else None
    for index, item in enumerate(value):
        item_path = at(path, index)
        if choices is None:
            parse_string(item, item_path, pattern=pattern, code=code, error=error)
        elif item not in choices:
            raise fail(item_path, f"{item!r} is not one of {', '.join(choices)}", code, error=error)
    if len(set(value)) != len(value):
        raise fail(path, "must not repeat a value", code, error=error)
    return tuple(value)


def parse_query(params: Mapping, *, allowed: Iterable[str], required: Iterable[str] = ()) -> dict[str, str]:
    """Query parameters as single strings; unknown or repeated parameters are errors."""
    allowed = set(allowed)
    result: dict[str, str] = {}
    for key in params:
        if key not in allowed:
            raise fail(key, f"unknown query parameter; allowed: {', '.join(sorted(allowed))}")
        values = params.getlist(key) if hasattr(params, "getlist") else [params[key]]
        if len(values) != 1:
            raise fail(key, "give the parameter once; use a comma-separated value for several")
        result[key] = values[0]
    for key in required:
        if key not in result:
            raise fail(key, "is required")
    return result


def query_int(raw: str, path: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise fail(path, f"expected an integer, got {raw!r}") from None
    return parse_int(value, path, minimum=minimum, maximum=maximum)


def query_list(raw: str, path: str, *, pattern: re.Pattern | None = None, max_items: int = 100) -> tuple[str, ...]:
    items = [item.strip() for item in raw.split(",") if item.strip()]
    if not items:
        raise fail(path, "must name at least one value")
    if len(items) > max_items:
        raise fail(path, f"must name at most {max_items} values")
    for index, item in enumerate(items):
        if pattern is not None and not pattern.fullmatch(item):
            raise fail(path, f"{item!r} does not match {pattern.pattern}")
    return tuple(dict.fromkeys(items))


def type_name(value) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "an object"}.get(type(value), type(value).__name__)
