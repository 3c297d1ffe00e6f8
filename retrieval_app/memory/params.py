"""The query strings of the ``GET /memory/*`` lookups, parsed once into frozen dataclasses.

Every route rejects unknown and repeated parameters, and every error names the parameter
(``422 request_schema``, ``invalid_path``, ``date_order``). Limits are the ``MEMORY_*``
settings.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from catalog_app.bm25_terms import bm25_query_terms
from catalog_app.record_limits import ENTITY_CHARS
from memseek_site.conf import memseek_setting
from memseek_site.errors import RequestError
from memseek_site.parsing import parse_query, parse_string, query_int

from .addresses import MemoryPath, parse_path
from .dates import DateWindow, parse_window
from .passages import parse_cursor

_PAGE = ("limit", "cursor")
_WINDOW = ("path", "entity", "after", "before")


@dataclass(frozen=True, slots=True)
class Page:
    limit: int
    cursor: tuple[datetime, int] | None


@dataclass(frozen=True, slots=True)
class Window:
    path: MemoryPath
    entity: str | None
    dates: DateWindow


@dataclass(frozen=True, slots=True)
class GrepRequest:
    phrase: str
    terms: tuple[str, ...]
    window: Window
    page: Page


@dataclass(frozen=True, slots=True)
class LatestRequest:
    window: Window
    page: Page


@dataclass(frozen=True, slots=True)
class AroundRequest:
    path: MemoryPath
    before: int
    after: int


@dataclass(frozen=True, slots=True)
class LsRequest:
    path: MemoryPath
    limit: int
    after: MemoryPath | None  # the last entry of the previous page


@dataclass(frozen=True, slots=True)
class PathPage:
    path: MemoryPath
    page: Page


def grep_request(params) -> GrepRequest:
    raw = parse_query(params, allowed=("q", *_WINDOW, *_PAGE), required=("q",))
    phrase = parse_string(raw["q"], "q", max_length=memseek_setting("MEMORY_GREP_MAX_CHARS"))
    terms = tuple(bm25_query_terms(phrase))
    if not terms:
        raise RequestError("request_schema", "must hold a letter or a digit; grep matches words, ids and codes", "q")
    return GrepRequest(phrase, terms, _window(raw), _page(raw))


def latest_request(params) -> LatestRequest:
    raw = parse_query(params, allowed=(*_WINDOW, *_PAGE))
    return LatestRequest(_window(raw), _page(raw))


def around_request(params) -> AroundRequest:
    raw = parse_query(params, allowed=("path", "before", "after"), required=("path",))
    most = memseek_setting("MEMORY_AROUND_MAX")
    counts = {side: query_int(raw[side], side, minimum=0, maximum=most) if side in raw else 5
              for side in ("before", "after")}
    path = parse_path(raw["path"], field="path", complete=True, kinds=("passages",))
    return AroundRequest(path, counts["before"], counts["after"])


def read_request(params) -> MemoryPath:
    raw = parse_query(params, allowed=("path",), required=("path",))
    return parse_path(raw["path"], field="path", complete=True)


def ls_request(params) -> LsRequest:
    raw = parse_query(params, allowed=("path", *_PAGE))
    path = parse_path(raw.get("path", ""), field="path")
    if path.complete:
        raise RequestError("invalid_path", "names one passage or fact; ls lists what is under a prefix "
                           "(use /memory/read)", "path")
    after = None
    if "cursor" in raw:
        after = parse_path(raw["cursor"], field="cursor")
        if after.depth != path.depth + 1 or MemoryPath(*_parents(after)) != path:
            raise RequestError("request_schema", "is not an entry of this listing; pass next_cursor from the "
                               "previous page", "cursor")
    return LsRequest(path, _limit(raw), after)


def _parents(path: MemoryPath) -> list:
    values = [path.kind, path.collection, path.entity, path.leaf][:path.depth - 1]
    return values


def history_request(params) -> PathPage:
    raw = parse_query(params, allowed=("path", *_PAGE), required=("path",))
    return PathPage(parse_path(raw["path"], field="path", complete=True, kinds=("facts",)), _page(raw))


def _window(raw: dict) -> Window:
    path = parse_path(raw.get("path", "passages"), field="path")
    if path.complete:
        raise RequestError("invalid_path", "must be a prefix (at most passages/<collection>/<entity>); "
                           "use /memory/read for one passage or fact", "path")
    entity = parse_string(raw["entity"], "entity", max_length=ENTITY_CHARS) if "entity" in raw else None
    return Window(path, entity, parse_window(raw.get("after"), raw.get("before")))


def _page(raw: dict) -> Page:
    return Page(_limit(raw), parse_cursor(raw["cursor"]) if "cursor" in raw else None)


def _limit(raw: dict) -> int:
    if "limit" not in raw:
        return memseek_setting("MEMORY_PAGE_LIMIT")
    return query_int(raw["limit"], "limit", minimum=1, maximum=memseek_setting("MEMORY_MAX_PAGE"))
