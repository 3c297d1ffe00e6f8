"""The SearchSpec: one search request, parsed once and strictly into frozen dataclasses.

Every rule of views-and-search.md and reference A.3 that needs no catalog is checked here;
a violation raises ``SpecError`` with the dotted path of the offending value. Catalog rules
(collections, fields, profiles, score names) are checked by ``resolve``. A single search is
represented as one source named ``None``; combined searches keep their source names.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime

from .rank_expression import RankError, RankNode, parse_rank
from .render import Fence

PUBLIC_NAME = re.compile(r"^[a-z][a-z0-9._-]{0,63}$")
SYSTEM_COLLECTION = "_system"
MODES = ("vector", "text", "hybrid", "recent", "structured")
QUERY_MODES = ("vector", "text", "hybrid")
OPERATORS = ("eq", "in", "gt", "gte", "lt", "lte", "exists", "contains_any", "contains_all")
INCLUDE_NAMES = ("text", "scores", "collection", "collection_version", "entity", "type", "key", "status", "depth",
                 "occurred_at", "created_at", "run_id")
MAX_LIST = 100
MAX_PROJECTIONS = 16
_TOP_KEYS = {"q", "mode", "scope", "where", "order_by", "k", "include", "fields", "annotations", "render", "fence",
             "rank", "rerank", "graph_boost", "params", "sources", "fuse", "boost"}
_SOURCE_KEYS = {"name", "mode", "scope", "where", "order_by", "rank", "params", "k", "weight"}
_PER_SEARCH_KEYS = ("mode", "scope", "where", "order_by", "rank")
_SCOPE_KEYS = {"collections", "collection_versions", "entities", "types", "status", "keyed", "versions",
               "occurred_after", "occurred_before", "depth_lte"}


class SpecError(Exception):
    """An invalid SearchSpec: ``path`` names the offending value."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message


@dataclass(frozen=True, slots=True)
class Scope:
    collections: tuple[str, ...] = ()  # empty: every collection (ad-hoc only)
    collection_versions: tuple[tuple[str, tuple[int, ...]], ...] = ()
    entities: tuple[str, ...] | None = None
    types: tuple[str, ...] | None = None
    status: str = "active"  # active | draft | all
    keyed: bool | None = None  # None: any
    versions: str = "current"  # current | all
    occurred_after: datetime | None = None
    occurred_before: datetime | None = None
    depth_lte: int | None = None

    def pinned_versions(self, collection: str) -> tuple[int, ...] | None:
        return dict(self.collection_versions).get(collection)


@dataclass(frozen=True, slots=True)
class Condition:
    field: str
    op: str
    operand: object  # tuples for list operands


@dataclass(frozen=True, slots=True)
class OrderKey:
    field: str
    direction: str  # asc | desc


@dataclass(frozen=True, slots=True)
class Source:
    name: str | None
    mode: str
    scope: Scope
    where: tuple[Condition, ...]
    order_by: tuple[OrderKey, ...]
    rank: RankNode | None
    candidates: int | None
    k: int
    weight: float = 1.0

    def candidate_cap(self) -> int:
        return self.candidates if self.candidates is not None else min(1000, max(100, 10 * self.k))


@dataclass(frozen=True, slots=True)
class Rerank:
    backend: str
    top_n: int


@dataclass(frozen=True, slots=True)
class GraphBoost:
    anchor: str
    graph: str | None
    depth: int
    weight: float
    limit: int


@dataclass(frozen=True, slots=True)
class SearchSpec:
    q: str | None
    sources: tuple[Source, ...]
    rank_constant: int | None  # set only when sources are fused
    boost: RankNode | None
    k: int
    include: tuple[str, ...]
    fields: tuple[str, ...]
    annotations: tuple[str, ...]
    render: bool
    fence: Fence | None
    rerank: Rerank | None
    graph_boost: GraphBoost | None

    @property
    def fused(self) -> bool:
        return self.rank_constant is not None


def parse_search_spec(raw, *, max_query_chars: int, allow_system: bool = True) -> SearchSpec:
    """Parse a SearchSpec. ``allow_system`` is False for view definitions (``_system`` may not
    be read by a view). Raises ``SpecError``; a too-long ``q`` raises ``QueryTooLong``."""
    doc = _mapping(raw, "", _TOP_KEYS)
    q = doc.get("q")
    if q is not None:
        if not isinstance(q, str):
            raise SpecError("q", "must be a string")
        if len(q) > max_query_chars:
            raise QueryTooLong(len(q), max_query_chars)
    k = _int(doc.get("k", 20), "k", 1, 100)
    if "sources" in doc:
        sources, rank_constant, boost = _fused_sources(doc, allow_system)
    else:
        for key in ("fuse", "boost"):
            if key in doc:
                raise SpecError(key, "only combined searches (sources) take fuse and boost")
        if "mode" not in doc:
            raise SpecError("mode", "is required (or send sources to combine several searches)")
        sources = (_source(doc, "", None, allow_system, k),)
        rank_constant, boost = None, None
    modes = {source.mode for source in sources}
    if modes & set(QUERY_MODES) and (q is None or not q.strip()):
        raise SpecError("q", f"a non-blank q is required for {'/'.join(sorted(modes & set(QUERY_MODES)))} search")
    render = _bool(doc.get("render", False), "render")
    fence = _fence(doc["fence"], render) if "fence" in doc else None
    return SearchSpec(
        q=q, sources=sources, rank_constant=rank_constant, boost=boost, k=k,
        include=_names(doc.get("include", []), "include", allowed=INCLUDE_NAMES),
        fields=_names(doc.get("fields", []), "fields", limit=MAX_PROJECTIONS),
        annotations=_names(doc.get("annotations", []), "annotations", limit=MAX_PROJECTIONS),
        render=render, fence=fence, rerank=_rerank(doc.get("rerank"), modes),
        graph_boost=_graph_boost(doc["graph_boost"]) if "graph_boost" in doc else None)


class QueryTooLong(Exception):
    def __init__(self, length: int, limit: int):
        super().__init__(f"q has {length} characters; at most {limit}")
        self.length = length
        self.limit = limit


def _fused_sources(doc: dict, allow_system: bool):
    for key in _PER_SEARCH_KEYS:
        if key in doc:
            raise SpecError(key, "with sources, set this inside each source, not at the top level")
    raw_sources = doc["sources"]
    if not isinstance(raw_sources, list) or not 1 <= len(raw_sources) <= 8:
        raise SpecError("sources", "must be a list of 1 to 8 searches")
    sources, names = [], set()
    for index, raw in enumerate(raw_sources):
        path = f"sources[{index}]"
        source_doc = _mapping(raw, path, _SOURCE_KEYS)
        if "name" not in source_doc:
            raise SpecError(f"{path}.name", "is required")
        name = _public_name(source_doc["name"], f"{path}.name")
        if name in names:
            raise SpecError(f"{path}.name", f"source name {name!r} is used twice")
        names.add(name)
        if "mode" not in source_doc:
            raise SpecError(f"{path}.mode", "is required")
        weight = _number(source_doc.get("weight", 1.0), f"{path}.weight")
        if not 0 < weight <= 100:
            raise SpecError(f"{path}.weight", "must be greater than 0 and at most 100")
        k = _int(source_doc.get("k", 20), f"{path}.k", 1, 100)
        sources.append(_source(source_doc, path, name, allow_system, k, weight))
    if "fuse" not in doc:
        raise SpecError("fuse", "combined searches must declare fuse: {kind: rrf}")
    fuse = _mapping(doc["fuse"], "fuse", {"kind", "rank_constant"})
    if fuse.get("kind") != "rrf":
        raise SpecError("fuse.kind", "the only fusion method is rrf")
    rank_constant = _int(fuse.get("rank_constant", 60), "fuse.rank_constant", 1, 1000)
    boost = None
    if "boost" in doc:
        boost = _rank(doc["boost"], "boost")
    return tuple(sources), rank_constant, boost


def _source(doc: dict, path: str, name: str | None, allow_system: bool, k: int, weight: float = 1.0) -> Source:
    mode = doc["mode"]
    mode_path = _at(path, "mode")
    if mode not in MODES:
        raise SpecError(mode_path, f"must be one of {', '.join(MODES)}")
    order_by = _order_by(doc.get("order_by", []), _at(path, "order_by"))
    if mode == "structured":
        if not order_by:
            raise SpecError(_at(path, "order_by"), "structured search requires order_by")
        if "rank" in doc:
            raise SpecError(_at(path, "rank"), "structured search is ordered by order_by; rank is not allowed")
    rank = _rank(doc["rank"], _at(path, "rank")) if "rank" in doc else None
    params = _mapping(doc.get("params", {}), _at(path, "params"), {"candidates"})
    candidates = _int(params["candidates"], _at(path, "params.candidates"), 1, 1000) if "candidates" in params else None
    return Source(name=name, mode=mode, scope=_scope(doc.get("scope", {}), _at(path, "scope"), allow_system),
                  where=_where(doc.get("where", {}), _at(path, "where")), order_by=order_by, rank=rank,
                  candidates=candidates, k=k, weight=weight)


def _scope(raw, path: str, allow_system: bool) -> Scope:
    doc = _mapping(raw, path, _SCOPE_KEYS)
    collections = _string_list(doc.get("collections", []), _at(path, "collections"))
    for index, name in enumerate(collections):
        if name == SYSTEM_COLLECTION and allow_system:
            continue
        _public_name(name, f"{_at(path, 'collections')}[{index}]")
    versions = []
    pinned = _mapping(doc.get("collection_versions", {}), _at(path, "collection_versions"), set(collections),
                      unknown="names a collection that is not in scope.collections")
    for name, numbers in pinned.items():
        numbers_path = _at(path, f"collection_versions.{name}")
        if not isinstance(numbers, list) or not numbers:
            raise SpecError(numbers_path, "must be a non-empty list of versions")
        checked = [_int(n, f"{numbers_path}[{i}]", 1, None) for i, n in enumerate(numbers)]
        if len(set(checked)) != len(checked):
            raise SpecError(numbers_path, "lists a version twice")
        versions.append((name, tuple(checked)))
    status = doc.get("status", "active")
    if status not in ("active", "draft", "all"):
        raise SpecError(_at(path, "status"), "must be active, draft or all")
    keyed = doc.get("keyed", "any")
    if not (isinstance(keyed, bool) or keyed == "any"):  # 1 == True: `in` would let 1 and 0.0 through
        raise SpecError(_at(path, "keyed"), "must be true, false or any")
    record_versions = doc.get("versions", "current")
    if record_versions not in ("current", "all"):
        raise SpecError(_at(path, "versions"), "must be current or all")
    after = _datetime(doc["occurred_after"], _at(path, "occurred_after")) if "occurred_after" in doc else None
    before = _datetime(doc["occurred_before"], _at(path, "occurred_before")) if "occurred_before" in doc else None
    if after is not None and before is not None and not after < before:
        raise SpecError(_at(path, "occurred_after"), "must be earlier than occurred_before")
    return Scope(
        collections=tuple(collections), collection_versions=tuple(versions),
        entities=tuple(_string_list(doc["entities"], _at(path, "entities"))) if "entities" in doc else None,
        types=tuple(_string_list(doc["types"], _at(path, "types"))) if "types" in doc else None,
        status=status, keyed=None if keyed == "any" else keyed, versions=record_versions, occurred_after=after,
        occurred_before=before,
        depth_lte=_int(doc["depth_lte"], _at(path, "depth_lte"), 0, None) if "depth_lte" in doc else None)


def _where(raw, path: str) -> tuple[Condition, ...]:
    doc = _mapping(raw, path, None)
    conditions = []
    for field, ops in doc.items():
        field_path = _at(path, field)
        _public_name(field, field_path)
        ops = _mapping(ops, field_path, set(OPERATORS))
        if not ops:
            raise SpecError(field_path, "needs at least one condition")
        for op, operand in ops.items():
            op_path = _at(field_path, op)
            if op == "exists":
                operand = _bool(operand, op_path)
            elif op in ("in", "contains_any", "contains_all"):
                if not isinstance(operand, list) or not 1 <= len(operand) <= MAX_LIST:
                    raise SpecError(op_path, f"must be a list of 1 to {MAX_LIST} values")
                operand = tuple(_scalar(v, f"{op_path}[{i}]") for i, v in enumerate(operand))
            elif op == "eq" and isinstance(operand, list):
                if len(operand) > MAX_LIST:
                    raise SpecError(op_path, f"at most {MAX_LIST} values")
                operand = tuple(_scalar(v, f"{op_path}[{i}]") for i, v in enumerate(operand))
            else:
                operand = _scalar(operand, op_path)
            conditions.append(Condition(field, op, operand))
    return tuple(conditions)


def _scalar(value, path: str):
    if value is None or isinstance(value, (dict, list)):
        raise SpecError(path, "must be a string, number or boolean")
    if isinstance(value, float) and not math.isfinite(value):
        raise SpecError(path, "must be finite")
    return value


def _order_by(raw, path: str) -> tuple[OrderKey, ...]:
    if not isinstance(raw, list):
        raise SpecError(path, "must be a list of {field, direction}")
    keys, seen = [], set()
    for index, item in enumerate(raw):
        item_path = f"{path}[{index}]"
        doc = _mapping(item, item_path, {"field", "direction"})
        if "field" not in doc:
            raise SpecError(_at(item_path, "field"), "is required")
        field = _public_name(doc["field"], _at(item_path, "field"))
        if field in seen:
            raise SpecError(_at(item_path, "field"), f"{field} is ordered twice")
        seen.add(field)
        direction = doc.get("direction", "asc")
        if direction not in ("asc", "desc"):
            raise SpecError(_at(item_path, "direction"), "must be asc or desc")
        keys.append(OrderKey(field, direction))
    return tuple(keys)


def _fence(raw, render: bool) -> Fence:
    doc = _mapping(raw, "fence", {"tag", "preamble"})
    if not render:
        raise SpecError("fence", "a fence wraps rendered rows; set render: true")
    preamble = doc.get("preamble")
    if preamble is not None and (not isinstance(preamble, str) or not preamble.strip()):
        raise SpecError("fence.preamble", "must be non-blank text")
    return Fence(tag=_public_name(doc.get("tag", "records"), "fence.tag"), preamble=preamble)


def _rerank(raw, modes: set[str]) -> Rerank | None:
    if raw is None:
        return None
    doc = _mapping(raw, "rerank", {"backend", "top_n"})
    backend = doc.get("backend", "none")
    if backend not in ("none", "llm_judge"):
        raise SpecError("rerank.backend", "must be none or llm_judge")
    top_n = _int(doc.get("top_n", 20), "rerank.top_n", 1, 20)
    if backend == "none":
        return None
    if not modes <= set(QUERY_MODES):
        raise SpecError("rerank", "llm_judge reranking needs every search to be text, vector or hybrid")
    return Rerank(backend, top_n)


def _graph_boost(raw) -> GraphBoost:
    doc = _mapping(raw, "graph_boost", {"anchor", "graph", "depth", "weight", "limit"})
    if "anchor" not in doc or not isinstance(doc["anchor"], str):
        raise SpecError("graph_boost.anchor", "is required text")
    anchor = doc["anchor"].strip()
    if not 1 <= len(anchor) <= 128:
        raise SpecError("graph_boost.anchor", "must be 1 to 128 characters after trimming")
    weight = _number(doc.get("weight", 0.05), "graph_boost.weight")
    if not 0 < weight <= 1:
        raise SpecError("graph_boost.weight", "must be above 0 and at most 1")
    return GraphBoost(anchor=anchor, graph=_public_name(doc["graph"], "graph_boost.graph") if "graph" in doc else None,
                      depth=_int(doc.get("depth", 2), "graph_boost.depth", 1, 4), weight=weight,
                      limit=_int(doc.get("limit", 100), "graph_boost.limit", 1, 100))


def _rank(raw, path: str) -> RankNode:
    try:
        return parse_rank(raw, path)
    except RankError as error:
        raise SpecError(error.path, error.message) from None


# --- small typed readers ----------------------------------------------------------------------

def _at(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _mapping(raw, path: str, allowed: set | None, unknown: str = "is not a known key") -> dict:
    if not isinstance(raw, dict):
        raise SpecError(path, "must be an object")
    if allowed is not None:
        for key in raw:
            if key not in allowed:
                hint = f"; allowed: {', '.join(sorted(allowed))}" if allowed else ""
                raise SpecError(_at(path, str(key)), f"{key!r} {unknown}{hint}")
    return raw


def _int(value, path: str, minimum: int | None, maximum: int | None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(path, "must be an integer")
    if minimum is not None and value < minimum or maximum is not None and value > maximum:
        bounds = f"between {minimum} and {maximum}" if maximum is not None else f"at least {minimum}"
        raise SpecError(path, f"must be {bounds}")
    return value


def _number(value, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SpecError(path, "must be a finite number")
    try:
        number = float(value)
    except OverflowError:  # an integer literal too large for a float
        raise SpecError(path, "must be a finite number") from None
    if not math.isfinite(number):
        raise SpecError(path, "must be a finite number")
    return number


def _bool(value, path: str) -> bool:
    if not isinstance(value, bool):
        raise SpecError(path, "must be true or false")
    return value


def _public_name(value, path: str) -> str:
    if not isinstance(value, str) or not PUBLIC_NAME.fullmatch(value):
        raise SpecError(path, f"{value!r} is not a valid name ({PUBLIC_NAME.pattern})")
    return value


def _string_list(value, path: str) -> list[str]:
    if not isinstance(value, list) or len(value) > MAX_LIST:
        raise SpecError(path, f"must be a list of at most {MAX_LIST} strings")
    for index, item in enumerate(value):
        if not isinstance(item, str) or not item:
            raise SpecError(f"{path}[{index}]", "must be a non-empty string")
    if len(set(value)) != len(value):
        raise SpecError(path, "must not repeat a value")
    return value


def _names(value, path: str, *, allowed=None, limit: int = MAX_LIST) -> tuple[str, ...]:
    if not isinstance(value, list) or len(value) > limit:
        raise SpecError(path, f"must be a list of at most {limit} names")
    for index, item in enumerate(value):
        if allowed is not None:
            if item not in allowed:
                raise SpecError(f"{path}[{index}]", f"{item!r} is not one of {', '.join(allowed)}")
        else:
            _public_name(item, f"{path}[{index}]")
    if len(set(value)) != len(value):
        raise SpecError(path, "must not repeat a name")
    return tuple(value)


def _datetime(value, path: str) -> datetime:
    if not isinstance(value, str):
        raise SpecError(path, "must be an ISO 8601 timestamp with a timezone")
    try:
        parsed = datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value)
    except ValueError:
        raise SpecError(path, f"{value!r} is not an ISO 8601 timestamp") from None
    if parsed.utcoffset() is None:
        raise SpecError(path, f"{value!r} needs a timezone (Z or +00:00)")
    return parsed
