"""The ``POST /memory/search`` body, parsed once and strictly into a frozen ``MemorySearchRequest``.

Keys: ``query`` (required), ``entity``, ``scope`` (a path prefix, ``addresses.parse_path``),
``before`` and ``after`` (``dates.parse_window``: ``YYYY-MM-DD`` or a full ISO time with a zone).
Unknown keys, wrong types, blank or over-long values are ``422`` with the key as ``path``; an
``entity`` that contradicts the scope's entity is ``request_schema`` at ``entity``. A scope that
names one passage or fact (a complete address) is not a prefix: ``invalid_path``.
"""
from __future__ import annotations

from dataclasses import dataclass

from catalog_app.record_limits import ENTITY_CHARS
from memseek_site.errors import ApiError
from memseek_site.parsing import fail, parse_object, parse_string

from ..request import parse_question
from .addresses import MemoryPath, parse_path
from .dates import DateWindow, parse_window

_KEYS = ("query", "entity", "scope", "before", "after")


@dataclass(frozen=True, slots=True)
class MemorySearchRequest:
    query: str
    entity: str | None  # the scope's entity when the scope names one
    scope: MemoryPath | None  # None: everything (no scope, or the root prefix)
    window: DateWindow  # start from after, end from before (either open)
    brief: bool  # no scope and no after: the brief shape; otherwise the ranked list


def parse_memory_search(raw) -> MemorySearchRequest:
    """Parse a ``POST /memory/search`` body; raises ``ApiError``."""
    doc = parse_object(raw, "", allowed=_KEYS, required=("query",))
    query = parse_question(doc["query"])
    entity = parse_string(doc["entity"], "entity", max_length=ENTITY_CHARS) if "entity" in doc else None
    scope = None
    if "scope" in doc:
        scope = parse_path(doc["scope"], field="scope")
        if scope.complete:
            raise ApiError("invalid_path", "names one passage or fact; scope takes a prefix such as "
                           "passages/<collection>/<entity> (read it with GET /memory/read)", path="scope")
        if scope.kind is None:
            scope = None  # the root prefix scopes nothing
        elif scope.entity is not None:
            if entity is not None and entity != scope.entity:
                raise fail("entity", f"names {entity!r} but scope is under entity {scope.entity!r}")
            entity = scope.entity
    window = parse_window(doc.get("after"), doc.get("before"))
    return MemorySearchRequest(query=query, entity=entity, scope=scope, window=window,
                               brief="scope" not in doc and "after" not in doc)
