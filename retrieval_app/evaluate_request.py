"""The ``POST /evaluate`` body, parsed once and strictly into a frozen ``EvaluateRequest``.

Shape (camelCase; unknown keys are ``422 request_schema`` with their dotted path)::

    {queries: [{id?, query, relevant: {<record id>: <grade, integer 0..100>}, ...overrides}],  # 1..100
     k?: 1..100 (default 10),
     target?: "retrieve" (default) | {view: <name>, parameters?: {...}, queryParameter?: "task"}}

With the ``retrieve`` target a query may carry any ``POST /retrieve`` field as an override
(``entity``, ``entities``, ``collections``, ``types``, ``tags``, ``agentId``, ``mode``,
``rerank``, ``includeSuperseded``, ``asOf``, ``asOfAxis``, ...), parsed by the retrieve parser
itself with paths under ``queries[i]``; ``raw``, ``topN`` and ``tokenBudget`` are refused because
evaluation always runs ``raw: true`` with ``topN = k`` (an untrimmed ranking). With a view
target a query may carry ``parameters`` (merged over the target's) and ``entity`` (shorthand for
``parameters.entity``); its ``query`` fills the view parameter ``queryParameter``. Whether the
view exists and takes those parameters is checked against the catalog when the evaluation runs.

Each query needs at least one record with grade >= 1 (recall and reciprocal rank are undefined
without one); query ids, when given, are unique.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from memseek_site.errors import ApiError
from memseek_site.parsing import PUBLIC_NAME, at, fail, parse_int, parse_list, parse_object, parse_string, parse_uuid

from .request import RetrieveRequest, parse_retrieve_request

MAX_QUERIES = 100
MAX_K = 100
DEFAULT_K = 10
MAX_RELEVANT = 1000
# Grades beyond this have no use for ranking quality, and the metric library's work grows with the
# largest grade it is given.
MAX_GRADE = 100
ID_CHARS = 200
DEFAULT_QUERY_PARAMETER = "task"
_FIXED = {"raw": "evaluation always runs raw: true", "topN": "evaluation sets topN to k",
          "tokenBudget": "evaluation is raw, so no budget applies"}
_RETRIEVE_ONLY = {"entities", "collections", "types", "tags", "agentId", "mode", "rerank", "includeSuperseded",
                  "excludeSuperseded", "asOf", "asOfAxis", "explain"}
_TARGET_KEYS = {"view", "parameters", "queryParameter"}


@dataclass(frozen=True, slots=True)
class ViewTarget:
    name: str
    parameters: MappingProxyType  # the target's parameters, shared by every query
    query_parameter: str


@dataclass(frozen=True, slots=True)
class EvalQuery:
    index: int
    id: str | None
    query: str
    relevant: MappingProxyType  # record id (canonical UUID string) -> grade
    retrieve: RetrieveRequest | None  # the retrieve target: the request to run (raw, topN = k)
    parameters: MappingProxyType | None  # a view target: this query's parameters (before the query text)


@dataclass(frozen=True, slots=True)
class EvaluateRequest:
    queries: tuple[EvalQuery, ...]
    k: int
    target: ViewTarget | None  # None: POST /retrieve


def parse_evaluate_request(raw) -> EvaluateRequest:
    """Parse a ``POST /evaluate`` body; raises ``ApiError`` with the dotted path."""
    doc = parse_object(raw, "", allowed={"queries", "k", "target"}, required=("queries",))
    k = parse_int(doc.get("k", DEFAULT_K), "k", minimum=1, maximum=MAX_K)
    target = _target(doc.get("target", "retrieve"))
    items = parse_list(doc["queries"], "queries", min_items=1, max_items=MAX_QUERIES)
    queries = tuple(_query(item, index, k, target) for index, item in enumerate(items))
    seen: dict[str, int] = {}
    for query in queries:
        if query.id is not None:
            if query.id in seen:
                raise fail(at(at("queries", query.index), "id"), f"repeats the id of queries[{seen[query.id]}]")
            seen[query.id] = query.index
    return EvaluateRequest(queries, k, target)


def _target(value) -> ViewTarget | None:
    if value == "retrieve":
        return None
    if not isinstance(value, dict):
        raise fail("target", 'must be "retrieve" or {view, parameters?, queryParameter?}')
    doc = parse_object(value, "target", allowed=_TARGET_KEYS, required=("view",))
    name = parse_string(doc["view"], "target.view", pattern=PUBLIC_NAME)
    parameters = doc.get("parameters", {})
    if not isinstance(parameters, dict):
        raise fail("target.parameters", "expected an object of view parameters")
    query_parameter = parse_string(doc.get("queryParameter", DEFAULT_QUERY_PARAMETER), "target.queryParameter")
    if query_parameter in parameters:
        raise fail(at("target.parameters", query_parameter), "is filled by each query's text (queryParameter)")
    return ViewTarget(name, MappingProxyType(dict(parameters)), query_parameter)


def _query(value, index: int, k: int, target: ViewTarget | None) -> EvalQuery:
    path = at("queries", index)
    if not isinstance(value, dict):
        raise fail(path, "expected an object {id?, query, relevant, ...}")
    for key in value:
        if key in _FIXED:
            raise fail(at(path, key), f"cannot be set per query: {_FIXED[key]}")
        if target is not None and key in _RETRIEVE_ONLY:
            raise fail(at(path, key), "applies to the retrieve target only; pass view parameters in parameters")
        if target is None and key == "parameters":
            raise fail(at(path, key), "applies to a view target only")
    if "query" not in value:
        raise fail(at(path, "query"), "is required")
    if "relevant" not in value:
        raise fail(at(path, "relevant"), "is required")
    query_id = parse_string(value["id"], at(path, "id"), max_length=ID_CHARS) if "id" in value else None
    relevant = _relevant(value["relevant"], at(path, "relevant"))
    overrides = {key: item for key, item in value.items() if key not in ("id", "relevant")}
    if target is None:
        try:
            request = parse_retrieve_request({**overrides, "raw": True, "topN": k})
        except ApiError as error:
            raise error.prefixed(path, path) from None
        return EvalQuery(index, query_id, request.query, relevant, request, None)
    allowed = {"id", "query", "relevant", "parameters", "entity"}
    parse_object(value, path, allowed=allowed)
    query = parse_string(value["query"], at(path, "query"))
    parameters = value.get("parameters", {})
    if not isinstance(parameters, dict):
        raise fail(at(path, "parameters"), "expected an object of view parameters")
    parameters = {**target.parameters, **parameters}
    if "entity" in value:
        if "entity" in value.get("parameters", {}):
            raise fail(at(path, "entity"), "send entity or parameters.entity, not both")
        parameters["entity"] = value["entity"]
    if target.query_parameter in parameters:
        raise fail(at(at(path, "parameters"), target.query_parameter),
                   "is filled by the query text (target.queryParameter)")
    return EvalQuery(index, query_id, query, relevant, None, MappingProxyType(parameters))


def _relevant(value, path: str) -> MappingProxyType:
    if not isinstance(value, dict):
        raise fail(path, "expected an object {record id: grade}")
    if not value:
        raise fail(path, "must name at least one relevant record")
    if len(value) > MAX_RELEVANT:
        raise fail(path, f"at most {MAX_RELEVANT} records")
    grades: dict[str, int] = {}
    for key, grade in value.items():
        where = at(path, key)
        record_id = str(parse_uuid(key, where))
        if record_id in grades:
            raise fail(where, "names the same record as another key")
        grades[record_id] = parse_int(grade, where, minimum=0, maximum=MAX_GRADE)
    if not any(grade >= 1 for grade in grades.values()):
        raise fail(path, "needs at least one record with grade >= 1 (recall and reciprocal rank are undefined "
                         "without one)")
    return MappingProxyType(grades)
