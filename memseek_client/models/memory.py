"""The memory brief (``POST /memory/search``) and the lookups beside it (``GET /memory/grep``,
``latest``, ``around``, ``read``, ``ls``, ``history``), spec memory-brief-and-lookups.md. Every
result carries ``id`` and ``path``, so the next call can be a lookup."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any



@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryHit:
    """A passage: its address (``id``, ``path``), who spoke, and its text (at most 1,400
    characters; ``truncated`` says when it was cut, ``read(path)`` gives it whole)."""

    id: str
    path: str
    roles: tuple[str, ...]
    text: str
    truncated: bool
    content: str
    occurred_at: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryKnown:
    """One line of what is known now about one subject and attribute."""

    subject: str
    attribute: str
    line: str
    said: str
    ids: tuple[str, ...]
    paths: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryWorkedOut:
    """A line computed over the records: ``kind`` is ``count`` (``value``), ``interval``
    (``days``) or ``conflict``."""

    kind: str
    line: str
    ids: tuple[str, ...]
    value: int | None = None
    days: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryFactSource:
    id: str
    path: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryFact:
    id: str
    path: str
    said: str
    line: str
    derived_from: tuple[MemoryFactSource, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Brief:
    """Both shapes of ``POST /memory/search``: the brief (no ``scope``, no ``after``) and the
    ranked list (only ``query``, ``found``, ``hits`` and, when any match, ``facts``). ``held``
    is ``False`` when memory's own check says it does not hold the answer, ``None`` when no
    check ran."""

    query: str
    found: int
    hits: tuple[MemoryHit, ...]
    notes: tuple[str, ...] | None = None
    known: tuple[MemoryKnown, ...] | None = None
    worked_out: tuple[MemoryWorkedOut, ...] | None = None
    facts: tuple[MemoryFact, ...] | None = None
    held: bool | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryGrep:
    """Passages containing the phrase, newest first; ``complete`` is false when the server
    stopped looking before every candidate was checked."""

    query: str
    path: str
    found: int
    hits: tuple[MemoryHit, ...]
    next_cursor: str | None
    complete: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryLatest:
    path: str
    found: int
    hits: tuple[MemoryHit, ...]
    next_cursor: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryAround:
    """The passages either side of ``passage`` in the same conversation, in order."""

    passage: MemoryHit
    before: tuple[MemoryHit, ...]
    after: tuple[MemoryHit, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryRead:
    id: str
    path: str
    passage_path: str
    fact_path: str | None
    collection: str
    entity: str
    type: str
    key: str | None
    status: str
    roles: tuple[str, ...]
    text: str
    content: Any
    derived_from: tuple[str, ...]
    occurred_at: str
    recorded_at: str
    current: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryLsEntry:
    """One thing under a path: ``kind`` is ``root``, ``collection``, ``entity``, ``passage`` or
    ``fact``; the optional members depend on the kind."""

    name: str
    kind: str
    path: str
    id: str | None
    count: int | None = None
    versions: int | None = None
    roles: tuple[str, ...] | None = None
    text: str | None = None
    truncated: bool | None = None
    content: str | None = None
    occurred_at: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryLs:
    path: str
    entries: tuple[MemoryLsEntry, ...]
    next_cursor: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryVersion:
    id: str
    path: str
    fact_path: str
    text: str
    status: str
    superseded_by: str | None
    said_on: str
    occurred_at: str
    recorded_at: str
    roles: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryHistory:
    """Every value recorded for one subject and attribute, oldest first."""

    path: str
    collection: str
    entity: str
    key: str
    versions: tuple[MemoryVersion, ...]
    next_cursor: str | None
