"""The one JSON decoding of every request body: transport limits and value rules applied before
any route sees the body.

``StrictJSONParser`` is DRF's default parser, so every route that reads ``request.data`` gets a
body that has passed, in this order:

* size: a body over ``MAX_BODY_BYTES`` is ``413 body_too_large``, from its declared
  ``Content-Length`` before a byte is read, and never more than that many bytes are read;
* syntax: strict UTF-8 and strict JSON (no ``NaN``/``Infinity``), else ``422 invalid_json``;
* nesting: containers nested deeper than ``MAX_JSON_DEPTH`` are ``422 json_too_deep``;
* members: an object naming a key twice is ``422 duplicate_key`` (never "last one wins");
* text: a string or key holding U+0000 (which PostgreSQL text and jsonb cannot store) or a
  lone surrogate (not a Unicode character; it cannot be encoded to UTF-8) is
  ``422 invalid_character``;
* numbers: an integer outside PostgreSQL ``bigint`` or a number that is not a finite double is
  ``422 number_out_of_range``;
* timestamps: a string that reads as an ISO 8601 timestamp with an offset whose UTC instant is
  outside years 1-9999 (``0001-01-01T00:00:00+14:00``, ``9999-12-31T23:59:59-14:00``) is
  ``422 datetime_out_of_range``: no route could store and read it back, whatever field it is.

Every rejection carries the dotted path of the offending value (``records[0].entity``), the
first one in document order. Decoding is the standard library's C scanner; the checks are one
iterative walk over the decoded values, so no input recurses beyond ``MAX_JSON_DEPTH`` here.
"""
from __future__ import annotations

import json
import math
import re
from datetime import datetime, timezone

from rest_framework.parsers import BaseParser

from .conf import memseek_setting
from .errors import ApiError

MAX_JSON_DEPTH = 64
BIGINT_MIN, BIGINT_MAX = -(2**63), 2**63 - 1
# Digits of the longest bigint; a longer digit run is out of range without converting it (and
# int() of a few thousand digits is slow, then refused by the interpreter).
_BIGINT_DIGITS = 19
# Longer strings are never timestamps; the limit keeps the timestamp check off ordinary text.
_TIMESTAMP_CHARS = 64
_FORBIDDEN = re.compile("[\x00\ud800-\udfff]")
# Strict JSON carries U+0000 and surrogates only as \u escapes (a raw control character is a
# syntax error, and a surrogate is no UTF-8); a body without one of these has none. An escaped
# backslash before "u0000" matches too, which only costs the per-string check.
_ESCAPED_FORBIDDEN = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")
_STRING_OR_BRACKET = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


class _Members(list):
    """An object's ``(key, value)`` pairs in document order, when a key repeats."""


class _BadNumber:
    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


class StrictJSONParser(BaseParser):
    """DRF's default parser: ``application/json`` bodies decoded by ``decode_json_body``.

    Not a ``JSONParser`` subclass on purpose: for those DRF reads ``request.body``, which Django
    caps at ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (2.5 MB) by raising an exception DRF does not know,
    so the largest documented batch was a 500. Here DRF hands over the request stream itself.
    """

    media_type = "application/json"
    limit_name = "MAX_BODY_BYTES"  # how the 413 detail names the limit

    def body_limit(self) -> int:
        """The most bytes a body may have; a route's own subclass may hold its bodies to less."""
        return memseek_setting("MAX_BODY_BYTES")

    def parse(self, stream, media_type=None, parser_context=None):
        return decode_json_body(self.read_limited(stream, parser_context))

    def read_limited(self, stream, parser_context) -> bytes:
        """The body's bytes, or ``413 body_too_large`` past ``body_limit()``."""
        limit = self.body_limit()
        meta = parser_context["request"].META
        declared = meta.get("CONTENT_LENGTH") or meta.get("HTTP_CONTENT_LENGTH") or "0"
        if declared.isdigit() and int(declared) > limit:
            raise _too_large(int(declared), limit, self.limit_name)
        raw = b"" if stream is None else stream.read(limit + 1)
        if len(raw) > limit:
            raise _too_large(None, limit, self.limit_name)
        return raw


def decode_json_body(raw: bytes):
    """Decode ``raw`` (UTF-8 JSON) into plain dicts, lists and scalars, or raise ``ApiError`` by
    the rules of the module docstring."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ApiError("invalid_json", f"The body is not UTF-8: byte {error.start} is invalid.") from None
    try:
        tree = json.loads(text, object_pairs_hook=_object, parse_int=_integer, parse_float=_float,
                          parse_constant=_BadNumber)
    except RecursionError:
        raise _too_deep(_path_too_deep(text)) from None
    except json.JSONDecodeError as error:
        raise ApiError("invalid_json", f"The body is not valid JSON: {error.msg} at line {error.lineno} "
                                       f"column {error.colno}.") from None
    return _checked(tree, escaped=_ESCAPED_FORBIDDEN.search(text) is not None)


def _object(pairs: list):
    """An object's members as a dict, or as ``_Members`` when a key repeats (the walk names it)."""
    members = dict(pairs)
    return members if len(members) == len(pairs) else _Members(pairs)


def _integer(text: str):
    if len(text.lstrip("-")) > _BIGINT_DIGITS:
        return _BadNumber(text)
    value = int(text)
    return value if BIGINT_MIN <= value <= BIGINT_MAX else _BadNumber(text)


def _float(text: str):
    value = float(text)
    return value if math.isfinite(value) else _BadNumber(text)


def _checked(tree, *, escaped: bool):
    """Walk ``tree`` top-down in document order (an object's keys before its values) and return
    it, or raise the first rule broken, with its path. Without ``escaped`` no string can hold a
    forbidden character. A value's place is kept as a chain of (parent place, key or index) and
    spelled as a path only for an error."""
    # (value, place, depth of the value if it is a container)
    pending = [(tree, None, 1)]
    while pending:
        value, place, depth = pending.pop()
        if isinstance(value, dict):
            if depth > MAX_JSON_DEPTH:
                raise _too_deep(_path(place))
            if escaped:
                for key in value:
                    if _FORBIDDEN.search(key):
                        check_text(key, member_path(_path(place), key))
            pending.extend((member, (place, key), depth + 1) for key, member in reversed(value.items()))
        elif isinstance(value, _Members):  # a key repeats: the first bad or repeated key is the error
            if depth > MAX_JSON_DEPTH:
                raise _too_deep(_path(place))
            path, seen = _path(place), set()
            for key, _ in value:
                check_text(key, member_path(path, key))
                if key in seen:
                    raise _rule("duplicate_key", member_path(path, key), "names a key the object already has; "
                                "give each key once")
                seen.add(key)
        elif isinstance(value, list):
            if depth > MAX_JSON_DEPTH:
                raise _too_deep(_path(place))
            pending.extend((value[index], (place, index), depth + 1) for index in range(len(value) - 1, -1, -1))
        elif isinstance(value, str):
            if escaped and _FORBIDDEN.search(value):
                check_text(value, _path(place))
            if _outside_years(value):
                raise _rule("datetime_out_of_range", _path(place), f"{value} is outside years 1-9999 in UTC, which "
                            "cannot be stored and read back")
        elif isinstance(value, _BadNumber):
            raise _rule("number_out_of_range", _path(place), f"{_excerpt(value.text)} is outside what is stored: "
                        f"integers from {BIGINT_MIN} to {BIGINT_MAX} (bigint), other numbers finite doubles")
    return tree


def _path(place) -> str:
    """The dotted path of a place of ``_checked`` (``None``: the document itself)."""
    steps = []
    while place is not None:
        place, step = place
        steps.append(step)
    path = ""
    for step in reversed(steps):
        path = f"{path}[{step}]" if isinstance(step, int) else member_path(path, step)
    return path


def check_text(value: str, path: str) -> None:
    """Raise ``422 invalid_character`` at ``path`` when ``value`` holds U+0000 or a lone surrogate."""
    found = _FORBIDDEN.search(value)
    if found is None:
        return
    if found.group() == "\x00":
        raise _rule("invalid_character", path, "contains U+0000 (NUL), which cannot be stored; remove it")
    raise _rule("invalid_character", path, f"contains a lone surrogate U+{ord(found.group()):04X}, which is not "
                "a Unicode character; send the character itself or a complete surrogate pair")


def _outside_years(value: str) -> bool:
    """Whether ``value`` reads as an ISO 8601 timestamp with an offset whose UTC instant is
    outside years 1-9999."""
    if len(value) > _TIMESTAMP_CHARS or not value[:4].isdigit():
        return False
    try:
        moment = datetime.fromisoformat(value[:-1] + "+00:00" if value[-1] in "Zz" else value)
    except ValueError:
        return False  # not a timestamp: ordinary text
    if moment.utcoffset() is None:
        return False
    try:
        moment.astimezone(timezone.utc)
    except OverflowError:
        return True
    return False


def _path_too_deep(text: str) -> str | None:
    """The path of the first container nested deeper than ``MAX_JSON_DEPTH`` in ``text``, which
    is too deep for the decoder itself: the text up to that container, with ``null`` in its place
    and the open containers closed, decodes, and the path is its last member at each level.
    None when that prefix is not valid JSON either."""
    opened: list[str] = []
    for match in _STRING_OR_BRACKET.finditer(text):
        token = match.group()
        if token in "[{":
            if len(opened) == MAX_JSON_DEPTH:
                closers = "".join("]" if opener == "[" else "}" for opener in reversed(opened))
                try:
                    node = json.loads(text[:match.start()] + "null" + closers, object_pairs_hook=_Members)
                except (json.JSONDecodeError, RecursionError):
                    return None
                path = ""
                for _ in opened:
                    if isinstance(node, _Members):
                        key, node = node[-1]
                        path = member_path(path, key)
                    else:
                        path, node = f"{path}[{len(node) - 1}]", node[-1]
                return path
            opened.append(token)
        elif token in "]}" and opened:
            opened.pop()
    return None


def member_path(path: str, key: str) -> str:
    """The dotted path of ``key`` inside ``path``; a forbidden character in the key is written
    as ``\\uXXXX`` text, so the error naming it can be encoded."""
    key = _FORBIDDEN.sub(lambda found: f"\\u{ord(found.group()):04x}", key)
    return f"{path}.{key}" if path else key


def _excerpt(text: str) -> str:
    return text if len(text) <= 40 else f"{text[:20]}...({len(text)} characters)"


def _rule(code: str, path: str, message: str) -> ApiError:
    return ApiError(code, f"{path}: {message}" if path else message, path=path or None)


def _too_deep(path: str | None) -> ApiError:
    message = f"nests containers more than {MAX_JSON_DEPTH} deep"
    return _rule("json_too_deep", path or "", message)


def _too_large(size: int | None, limit: int, limit_name: str) -> ApiError:
    size_text = f"is {size} bytes" if size is not None else "is larger than that"
    return ApiError("body_too_large", f"The body {size_text}; at most {limit} bytes are accepted ({limit_name}). "
                                      "Split the batch.")
