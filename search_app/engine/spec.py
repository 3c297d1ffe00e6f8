"""The SearchSpec: one search request, parsed once and strictly into frozen dataclasses.

Every rule of views-and-search.md and reference A.3 that needs no catalog is checked here;
a violation raises ``SpecError`` with the dotted path of the offending value. Catalog rules
(collections, fields, profiles, score names) are checked by ``resolve``. A single search is
represented as one source named ``None``; combined searches keep their source names.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from functools import partial

from memseek_site.errors import ApiError, RequestError
from memseek_site.parsing import PUBLIC_NAME, at, parse_bool, parse_datetime, parse_int, parse_names, parse_number, \
    parse_object, parse_string

from .rank_expression import RankNode, parse_rank, validate_rank
from .render import Fence

CODE = "request_schema"
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


class SpecError(RequestError):
    """An invalid SearchSpec: ``path`` names the offending value (``""``: the body itself)."""

    root_path = ""


class QueryTooLong(ApiError):
    """``q`` is longer than ``MAX_QUERY_CHARS``; ``length`` and ``limit`` say by how much."""

    length: int
    limit: int

    @classmethod
    def of(cls, length: int, limit: int) -> QueryTooLong:
        error = cls("query_too_long", f"q has {length} characters; at most {limit}", "q")
        error.length, error.limit = length, limit
        return error


# The strict readers, raising SpecError.
_mapping = partial(parse_object, error=SpecError)
_int = partial(parse_int, error=SpecError)
_number = partial(parse_number, error=SpecError)
_bool = partial(parse_bool, error=SpecError)
_datetime = partial(parse_datetime, error=SpecError)
_public_name = partial(parse_string, pattern=PUBLIC_NAME, error=SpecError)
_names = partial(parse_names, max_items=MAX_LIST, error=SpecError)


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
    doc = _mapping(raw, "", allowed=_TOP_KEYS)
    q = doc.get("q")
    if q is not None:
        if not isinstance(q, str):
            raise SpecError(CODE, "must be a string", "q")
        if len(q) > max_query_chars:
            raise QueryTooLong.of(len(q), max_query_chars)
    k = _int(doc.get("k", 20), "k", minimum=1, maximum=100)
    if "sources" in doc:
        sources, rank_constant, boost = _fused_sources(doc, allow_system)
    else:
        for key in ("fuse", "boost"):
            if key in doc:
                raise SpecError(CODE, "only combined searches (sources) take fuse and boost", key)
        if "mode" not in doc:
            raise SpecError(CODE, "is required (or send sources to combine several searches)", "mode")
        sources = (_source(doc, "", None, allow_system, k),)
        rank_constant, boost = None, None
    modes = {source.mode for source in sources}
    if modes & set(QUERY_MODES) and (q is None or not q.strip()):
        raise SpecError(CODE, f"a non-blank q is required for {'/'.join(sorted(modes & set(QUERY_MODES)))} search", "q")
    render = _bool(doc.get("render", False), "render")
    fence = _fence(doc["fence"], render) if "fence" in doc else None
    return SearchSpec(
        q=q, sources=sources, rank_constant=rank_constant, boost=boost, k=k,
        include=_names(doc.get("include", []), "include", choices=INCLUDE_NAMES),
        fields=_names(doc.get("fields", []), "fields", max_items=MAX_PROJECTIONS),
        annotations=_names(doc.get("annotations", []), "annotations", max_items=MAX_PROJECTIONS),
        render=render, fence=fence, rerank=_rerank(doc.get("rerank"), modes),
        graph_boost=_graph_boost(doc["graph_boost"]) if "graph_boost" in doc else None)


def _fused_sources(doc: dict, allow_system: bool):
    for key in _PER_SEARCH_KEYS:
        if key in doc:
            raise SpecError(CODE, "with sources, set this inside each source, not at the top level", key)
    raw_sources = doc["sources"]
    if not isinstance(raw_sources, list) or not 1 <= len(raw_sources) <= 8:
        raise SpecError(CODE, "must be a list of 1 to 8 searches", "sources")
    sources, names = [], set()
    for index, raw in enumerate(raw_sources):
        path = f"sources[{index}]"
        source_doc = _mapping(raw, path, allowed=_SOURCE_KEYS)
        if "name" not in source_doc:
            raise SpecError(CODE, "is required", f"{path}.name")
        name = _public_name(source_doc["name"], f"{path}.name")
        if name in names:
            raise SpecError(CODE, f"source name {name!r} is used twice", f"{path}.name")
        names.add(name)
        if "mode" not in source_doc:
            raise SpecError(CODE, "is required", f"{path}.mode")
        weight = _number(source_doc.get("weight", 1.0), f"{path}.weight")
        if not 0 < weight <= 100:
            raise SpecError(CODE, "must be greater than 0 and at most 100", f"{path}.weight")
        k = _int(source_doc.get("k", 20), f"{path}.k", minimum=1, maximum=100)
        sources.append(_source(source_doc, path, name, allow_system, k, weight))
    if "fuse" not in doc:
        raise SpecError(CODE, "combined searches must declare fuse: {kind: rrf}", "fuse")
    fuse = _mapping(doc["fuse"], "fuse", allowed={"kind", "rank_constant"})
    if fuse.get("kind") != "rrf":
        raise SpecError(CODE, "the only fusion method is rrf", "fuse.kind")
    rank_constant = _int(fuse.get("rank_constant", 60), "fuse.rank_constant", minimum=1, maximum=1000)
    boost = None
    if "boost" in doc:
        boost = _rank(doc["boost"], "boost", post_fusion=True)
    return tuple(sources), rank_constant, boost


def _source(doc: dict, path: str, name: str | None, allow_system: bool, k: int, weight: float = 1.0) -> Source:
    mode = doc["mode"]
    mode_path = at(path, "mode")
    if mode not in MODES:
        raise SpecError(CODE, f"must be one of {', '.join(MODES)}", mode_path)
    order_by = _order_by(doc.get("order_by", []), at(path, "order_by"))
    if mode == "structured":
        if not order_by:
            raise SpecError(CODE, "structured search requires order_by", at(path, "order_by"))
        if "rank" in doc:
            raise SpecError(CODE, "structured search is ordered by order_by; rank is not allowed", at(path, "rank"))
    rank = _rank(doc["rank"], at(path, "rank"), mode=mode) if "rank" in doc else None
    params = _mapping(doc.get("params", {}), at(path, "params"), allowed={"candidates"})
    candidates = _int(params["candidates"], at(path, "params.candidates"), minimum=1,
                      maximum=1000) if "candidates" in params else None
    return Source(name=name, mode=mode, scope=_scope(doc.get("scope", {}), at(path, "scope"), allow_system),
                  where=_where(doc.get("where", {}), at(path, "where")), order_by=order_by, rank=rank,
                  candidates=candidates, k=k, weight=weight)


def parse_scope(raw, path: str = "scope") -> Scope:
    """A search scope on its own (another route's body embeds it at ``path``); ``_system`` is
    not readable. Raises ``SpecError``."""
    return _scope(raw, path, allow_system=False)


def _scope(raw, path: str, allow_system: bool) -> Scope:
    doc = _mapping(raw, path, allowed=_SCOPE_KEYS)
    collections = _names(doc.get("collections", []), at(path, "collections"), pattern=None)
    for index, name in enumerate(collections):
        if name == SYSTEM_COLLECTION and allow_system:
            continue
        _public_name(name, f"{at(path, 'collections')}[{index}]")
    versions = []
    pinned = _mapping(doc.get("collection_versions", {}), at(path, "collection_versions"))
    for name in pinned:
        if name not in collections:
            raise SpecError(CODE, f"{name!r} names a collection that is not in scope.collections",
                            at(at(path, "collection_versions"), str(name)))
    for name, numbers in pinned.items():
        numbers_path = at(path, f"collection_versions.{name}")
        if not isinstance(numbers, list) or not 1 <= len(numbers) <= MAX_LIST:
            raise SpecError(CODE, f"must be a list of 1 to {MAX_LIST} versions", numbers_path)
        checked = [_int(n, f"{numbers_path}[{i}]", minimum=1) for i, n in enumerate(numbers)]
        if len(set(checked)) != len(checked):
            raise SpecError(CODE, "lists a version twice", numbers_path)
        versions.append((name, tuple(checked)))
    status = doc.get("status", "active")
    if status not in ("active", "draft", "all"):
        raise SpecError(CODE, "must be active, draft or all", at(path, "status"))
    keyed = doc.get("keyed", "any")
    if not (isinstance(keyed, bool) or keyed == "any"):  # 1 == True: `in` would let 1 and 0.0 through
        raise SpecError(CODE, "must be true, false or any", at(path, "keyed"))
    record_versions = doc.get("versions", "current")
    if record_versions not in ("current", "all"):
        raise SpecError(CODE, "must be current or all", at(path, "versions"))
    after = _datetime(doc["occurred_after"], at(path, "occurred_after")) if "occurred_after" in doc else None
    before = _datetime(doc["occurred_before"], at(path, "occurred_before")) if "occurred_before" in doc else None
    if after is not None and before is not None and not after < before:
        raise SpecError(CODE, "must be earlier than occurred_before", at(path, "occurred_after"))
    return Scope(
        collections=tuple(collections), collection_versions=tuple(versions),
        entities=_names(doc["entities"], at(path, "entities"), pattern=None) if "entities" in doc else None,
        types=_names(doc["types"], at(path, "types"), pattern=None) if "types" in doc else None,
        status=status, keyed=None if keyed == "any" else keyed, versions=record_versions, occurred_after=after,
        occurred_before=before,
        depth_lte=_int(doc["depth_lte"], at(path, "depth_lte"), minimum=0) if "depth_lte" in doc else None)


def _where(raw, path: str) -> tuple[Condition, ...]:
    doc = _mapping(raw, path)
    conditions = []
    for field, ops in doc.items():
        field_path = at(path, field)
        _public_name(field, field_path)
        ops = _mapping(ops, field_path, allowed=set(OPERATORS))
        if not ops:
            raise SpecError(CODE, "needs at least one condition", field_path)
        for op, operand in ops.items():
            op_path = at(field_path, op)
            if op == "exists":
                operand = _bool(operand, op_path)
            elif op in ("in", "contains_any", "contains_all"):
                if not isinstance(operand, list) or not 1 <= len(operand) <= MAX_LIST:
                    raise SpecError(CODE, f"must be a list of 1 to {MAX_LIST} values", op_path)
                operand = tuple(_scalar(v, f"{op_path}[{i}]") for i, v in enumerate(operand))
            elif op == "eq" and isinstance(operand, list):
                if len(operand) > MAX_LIST:
                    raise SpecError(CODE, f"at most {MAX_LIST} values", op_path)
                operand = tuple(_scalar(v, f"{op_path}[{i}]") for i, v in enumerate(operand))
            else:
                operand = _scalar(operand, op_path)
            conditions.append(Condition(field, op, operand))
    return tuple(conditions)


def _scalar(value, path: str):
    if value is None or isinstance(value, (dict, list)):
        raise SpecError(CODE, "must be a string, number or boolean", path)
    if isinstance(value, float) and not math.isfinite(value):
        raise SpecError(CODE, "must be finite", path)
    return value


def _order_by(raw, path: str) -> tuple[OrderKey, ...]:
    if not isinstance(raw, list) or len(raw) > MAX_PROJECTIONS:
        raise SpecError(CODE, f"must be a list of at most {MAX_PROJECTIONS} {{field, direction}}", path)
    keys, seen = [], set()
    for index, item in enumerate(raw):
        item_path = f"{path}[{index}]"
        doc = _mapping(item, item_path, allowed={"field", "direction"})
        if "field" not in doc:
            raise SpecError(CODE, "is required", at(item_path, "field"))
        field = _public_name(doc["field"], at(item_path, "field"))
        if field in seen:
            raise SpecError(CODE, f"{field} is ordered twice", at(item_path, "field"))
        seen.add(field)
        direction = doc.get("direction", "asc")
        if direction not in ("asc", "desc"):
            raise SpecError(CODE, "must be asc or desc", at(item_path, "direction"))
        keys.append(OrderKey(field, direction))
    return tuple(keys)


def _fence(raw, render: bool) -> Fence:
    doc = _mapping(raw, "fence", allowed={"tag", "preamble"})
    if not render:
        raise SpecError(CODE, "a fence wraps rendered rows; set render: true", "fence")
    preamble = doc.get("preamble")
    if preamble is not None and (not isinstance(preamble, str) or not preamble.strip()):
        raise SpecError(CODE, "must be non-blank text", "fence.preamble")
    return Fence(tag=_public_name(doc.get("tag", "records"), "fence.tag"), preamble=preamble)


def _rerank(raw, modes: set[str]) -> Rerank | None:
    if raw is None:
        return None
    doc = _mapping(raw, "rerank", allowed={"backend", "top_n"})
    backend = doc.get("backend", "none")
    if backend not in ("none", "llm_judge"):
        raise SpecError(CODE, "must be none or llm_judge", "rerank.backend")
    top_n = _int(doc.get("top_n", 20), "rerank.top_n", minimum=1, maximum=20)
    if backend == "none":
        return None
    if not modes <= set(QUERY_MODES):
        raise SpecError(CODE, "llm_judge reranking needs every search to be text, vector or hybrid", "rerank")
    return Rerank(backend, top_n)


def _graph_boost(raw) -> GraphBoost:
    doc = _mapping(raw, "graph_boost", allowed={"anchor", "graph", "depth", "weight", "limit"})
    if "anchor" not in doc or not isinstance(doc["anchor"], str):
        raise SpecError(CODE, "is required text", "graph_boost.anchor")
    anchor = doc["anchor"].strip()
    if not 1 <= len(anchor) <= 128:
        raise SpecError(CODE, "must be 1 to 128 characters after trimming", "graph_boost.anchor")
    weight = _number(doc.get("weight", 0.05), "graph_boost.weight")
    if not 0 < weight <= 1:
        raise SpecError(CODE, "must be above 0 and at most 1", "graph_boost.weight")
    return GraphBoost(anchor=anchor, graph=_public_name(doc["graph"], "graph_boost.graph") if "graph" in doc else None,
                      depth=_int(doc.get("depth", 2), "graph_boost.depth", minimum=1, maximum=4), weight=weight,
                      limit=_int(doc.get("limit", 100), "graph_boost.limit", minimum=1, maximum=100))


def _rank(raw, path: str, *, mode: str | None = None, post_fusion: bool = False) -> RankNode:
    """The parsed expression, its signals checked against ``mode`` (or a post-fusion boost);
    the score names it reads are checked against the catalog when the spec is resolved."""
    node = parse_rank(raw, path, error=SpecError)
    validate_rank(node, mode=mode, score_names=None, post_fusion=post_fusion, path=path, error=SpecError)
    return node
