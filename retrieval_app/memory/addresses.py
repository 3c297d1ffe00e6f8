"""Memory addresses: the path every memory result carries, and the one parser of path prefixes.

A passage (one record) is ``passages/<collection>/<entity>/<record id>``; a named fact (the
current value of one keyed lane) is ``facts/<collection>/<entity>/<key>``. ``ls``, ``scope`` and
the lookups take prefixes of these: ``passages/``, ``passages/tickets``,
``passages/tickets/contact.maria``, ``facts/profiles/contact.maria``; the empty path (or ``/``)
is the root.

Entities and keys are free text (as long as ``Record.entity`` and ``Record.key`` allow, either
may hold ``/``), so each segment is escaped: ``%`` is written ``%25``, ``/`` is ``%2F``, and every
control character (U+0001..U+001F, U+007F) is ``%XX``; nothing else is escaped. A path therefore
splits on ``/`` unambiguously and stays one printable line. The parser accepts ``%XX`` (either
case) for any ASCII character and returns the canonical spelling, so two spellings of one
address are the same address. Collections are public names and need no escaping. U+0000 cannot
be stored (the write side refuses it), so it is never part of an address.

Only active records are addressed as facts: ``record_path`` gives an active keyed record its
fact path and every other record (an event, a draft) its passage path; any record can be read
by its passage path.
"""
from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

from catalog_app.record_limits import ENTITY_CHARS, KEY_CHARS
from memseek_site.errors import ApiError, RequestError
from memseek_site.parsing import PUBLIC_NAME, schema_pattern

KINDS = ("passages", "facts")
# The longest canonical address: a fact path whose entity and key are escaped throughout.
MAX_PATH_CHARS = len("passages/") + 64 + 1 + 3 * ENTITY_CHARS + 1 + 3 * KEY_CHARS
_ESCAPED = re.compile(r"[%/\x01-\x1f\x7f]")
_ESCAPE = re.compile(r"%(.{0,2})", re.DOTALL)
_HEX2 = re.compile(r"[0-9A-Fa-f]{2}")


@dataclass(frozen=True, slots=True)
class MemoryPath:
    """A parsed address or prefix. Segments are unescaped; a later one is set only when every
    earlier one is (``kind`` None: the root)."""

    kind: str | None = None
    collection: str | None = None
    entity: str | None = None
    leaf: str | None = None  # a passage's record id (canonical UUID text) or a fact's key

    @property
    def depth(self) -> int:
        return sum(part is not None for part in (self.kind, self.collection, self.entity, self.leaf))

    @property
    def complete(self) -> bool:
        """Names one passage or one fact."""
        return self.leaf is not None

    @property
    def record_id(self) -> uuid.UUID:
        """The record id of a complete passage path."""
        if self.kind != "passages" or self.leaf is None:
            raise ValueError(f"{self.text!r} is not a passage address")
        return uuid.UUID(self.leaf)

    @property
    def text(self) -> str:
        """The canonical spelling (no trailing slash; the root is ``""``)."""
        parts = [self.kind, self.collection, self.entity, self.leaf]
        return "/".join(escape_segment(part) for part in parts if part is not None)

    def child(self, segment: str) -> MemoryPath:
        """This prefix extended by one unescaped segment (used to name ``ls`` entries)."""
        names = ("kind", "collection", "entity", "leaf")
        values = [self.kind, self.collection, self.entity, self.leaf]
        if self.leaf is not None:
            raise ValueError("a complete address has no children")
        values[values.index(None)] = segment
        return MemoryPath(**dict(zip(names, values)))


def escape_segment(value: str) -> str:
    return _ESCAPED.sub(lambda match: f"%{ord(match.group()):02X}", value)


def passage_path(record) -> str:
    """``passages/<collection>/<entity>/<record id>`` of any record."""
    return MemoryPath("passages", record.collection, record.entity, str(record.id)).text


def fact_path(record) -> str:
    """``facts/<collection>/<entity>/<key>`` of a keyed record; ``ValueError`` for an event."""
    if record.key is None:
        raise ValueError("an event record has no fact address")
    return MemoryPath("facts", record.collection, record.entity, record.key).text


def record_path(record) -> str:
    """The address a result shows for ``record``: its fact path when it is an active keyed
    record, else its passage path."""
    if record.key is not None and record.status == "active":
        return fact_path(record)
    return passage_path(record)


def parse_path(text, *, field: str, complete: bool = False, kinds: tuple[str, ...] = KINDS) -> MemoryPath:
    """Parse an address or prefix (module docstring). ``complete``: it must name one passage or
    fact; ``kinds``: the roots allowed (the root path itself only when ``complete`` is false).
    Raises ``ApiError("invalid_path", ..., field)``."""
    if not isinstance(text, str):
        raise _invalid(field, "must be a string path such as passages/<collection>/<entity>")
    if "\x00" in text:
        raise _invalid(field, "must not contain NUL")
    if len(text) > MAX_PATH_CHARS:
        raise _invalid(field, f"must be at most {MAX_PATH_CHARS} characters, got {len(text)}")
    body = text[:-1] if text.endswith("/") and not text.endswith("//") else text
    segments = [] if body == "" else body.split("/")
    if len(segments) > 4:
        raise _invalid(field, "has more than four segments (<root>/<collection>/<entity>/<id or key>)")
    if any(segment == "" for segment in segments):
        raise _invalid(field, "has an empty segment; remove the doubled or leading '/'")
    values = [_unescape(segment, field) for segment in segments]
    path = MemoryPath(*values)
    if path.kind is not None and path.kind not in kinds:
        raise _invalid(field, f"unknown root {path.kind!r}; a path starts with {' or '.join(kinds)}")
    if path.kind is None and complete:
        raise _invalid(field, f"must name one {' or '.join(kinds)} address")
    if path.collection is not None and not PUBLIC_NAME.fullmatch(path.collection):
        raise _invalid(field, f"collection {path.collection!r} is not a collection name")
    if path.entity is not None:
        _check_text(path.entity, ENTITY_CHARS, "entity", field)
    if path.leaf is not None:
        path = _checked_leaf(path, field)
    if complete and not path.complete:
        shape = "passages/<collection>/<entity>/<record id>" if path.kind == "passages" else \
            "facts/<collection>/<entity>/<key>"
        raise _invalid(field, f"must name one {path.kind[:-1]}: {shape}")
    return path


# --- The same grammar as a JSON Schema pattern, for the OpenAPI document ---------------------
_SEGMENT_CHAR = r"(?:[^%/\x00-\x1f\x7f]|%(?:0[1-9A-Fa-f]|[1-7][0-9A-Fa-f]))"
_LITERAL = r"[^%/\s\x00-\x1f\x7f\x85]"  # printable and not blank: a segment starts with one
_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"


def _text_segment(limit: int) -> str:
    return f"{_LITERAL}{_SEGMENT_CHAR}{{0,{limit - 1}}}"


def path_schema(*, complete: bool = False, kinds: tuple[str, ...] = KINDS, **extra) -> dict:
    """What ``parse_path(..., complete=complete, kinds=kinds)`` accepts, as a string schema: its
    segments, escapes and lengths (an entity or key segment is written starting with a printable
    character, which the parser does not require: the document is the stricter side there)."""
    collection = PUBLIC_NAME.pattern.removeprefix("^").removesuffix("$")
    entity = _text_segment(ENTITY_CHARS)
    if complete:
        leaves = {"passages": _UUID, "facts": _text_segment(KEY_CHARS)}
        body = "|".join(f"{kind}/{collection}/{entity}/{leaves[kind]}" for kind in kinds)
        pattern = f"^(?:{body})/?$"
    else:
        roots = "|".join(kinds)
        pattern = f"^(?:/?|(?:{roots})(?:/|/{collection}(?:/|/{entity}/?)?)?)$"
    return {"type": "string", "maxLength": MAX_PATH_CHARS, **extra, "pattern": schema_pattern(re.compile(pattern))}


def _checked_leaf(path: MemoryPath, field: str) -> MemoryPath:
    if path.kind == "facts":
        _check_text(path.leaf, KEY_CHARS, "key", field)
        return path
    try:
        record_id = uuid.UUID(path.leaf)
    except ValueError:
        raise _invalid(field, f"{path.leaf!r} is not a record id (a UUID)") from None
    return MemoryPath(path.kind, path.collection, path.entity, str(record_id))


def _check_text(value: str, limit: int, name: str, field: str) -> None:
    if len(value) > limit:
        raise _invalid(field, f"the {name} must be at most {limit} characters, got {len(value)}")
    if not value.strip():
        raise _invalid(field, f"the {name} must not be blank")


def _unescape(segment: str, field: str) -> str:
    def decoded(match: re.Match) -> str:
        digits = match.group(1)
        if not _HEX2.fullmatch(digits) or int(digits, 16) >= 0x80 or int(digits, 16) == 0:
            raise _invalid(field, f"'%{digits}' is not an escape; write % as %25 and / as %2F")
        return chr(int(digits, 16))

    return _ESCAPE.sub(decoded, segment)


def _invalid(field: str, message: str) -> ApiError:
    return RequestError("invalid_path", message, field)
