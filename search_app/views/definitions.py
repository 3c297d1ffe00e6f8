"""``views/*.yaml``: named, versioned views, checked when the catalog loads.

A search view is validated beyond its shape: every placeholder names a declared parameter;
the query is filled once with a synthetic valid sample and parsed as a strict SearchSpec;
every source names its collections; collections, pinned versions, profiles, capabilities,
rank operators, score names and every filtered, sorted or returned field resolve in every
reachable collection version. Graph and orphan views check their edge mapping and their
fixed parameter contract.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from catalog_app.catalog import checks
from catalog_app.catalog.errors import CatalogError
from catalog_app.catalog.registry import Catalog, Validated

from ..engine.profiles import search_profile
from ..engine.resolve import ResolveError, resolve_search
from ..engine.spec import QueryTooLong, SearchSpec, SpecError, parse_search_spec
from .parameters import GRAPH_PARAMETERS, ORPHAN_PARAMETERS, Parameter, check_fixed_contract, parse_parameters
from .templating import check_placeholders, fill_template, sample_values

KINDS = ("search", "graph", "graph_orphans")
CAPABILITIES = ("vector", "text", "recent", "structured")
GRAPH_ROLES = ("subject", "object", "predicate")
_KEYS = {"name", "version", "active", "kind", "parameters", "query", "required_capabilities", "graph"}
# The template check needs a query length bound; views are bounded by the deployment setting at
# call time, so the load-time parse only needs to accept any sample.
_LOAD_QUERY_CHARS = 1_000_000


@dataclass(frozen=True, slots=True)
class GraphMapping:
    edges: str
    subject: str
    object: str
    predicate: str
    nodes: str | None


@dataclass(frozen=True, slots=True)
class View:
    name: str
    version: int
    kind: str
    parameters: tuple[Parameter, ...]
    query: MappingProxyType | None  # the SearchSpec template of a search view
    required_capabilities: tuple[str, ...]
    graph: GraphMapping | None
    collections: tuple[str, ...]


def validate(raw, path: str, catalog: Catalog) -> Validated:
    doc = checks.mapping(raw, path, allowed=_KEYS, required={"name", "version"})
    name = checks.name(doc["name"], checks.at(path, "name"))
    version = checks.integer(doc["version"], checks.at(path, "version"), minimum=1)
    active = checks.boolean(doc.get("active", False), checks.at(path, "active"))
    kind = doc.get("kind", "search")
    if kind not in KINDS:
        raise CatalogError("schema", f"must be one of {', '.join(KINDS)}", checks.at(path, "kind"))
    parameters = parse_parameters(doc.get("parameters", {}), checks.at(path, "parameters"))
    if kind == "search":
        body = _search_body(doc, path, parameters, catalog)
    else:
        body = _graph_body(doc, path, kind, parameters, catalog)
    # Declaration order is part of the contract (input_schema "required"), and JSON objects in
    # the database do not keep key order, so parameters are stored as a list.
    declared = doc.get("parameters", {})
    body.update({"name": name, "version": version, "kind": kind,
                 "parameters": [{"name": key, "spec": declared[key]} for key in declared]})
    return Validated(name, version, active, body)


def _search_body(doc: dict, path: str, parameters, catalog: Catalog) -> dict:
    if "graph" in doc:
        raise CatalogError("schema", "only graph views take a graph mapping", checks.at(path, "graph"))
    if "query" not in doc:
        raise CatalogError("schema", "a search view needs a query", checks.at(path, "query"))
    query_path = checks.at(path, "query")
    check_placeholders(doc["query"], parameters, query_path)
    spec = view_spec(fill_template(doc["query"], sample_values(parameters)), query_path,
                     max_query_chars=_LOAD_QUERY_CHARS)
    capabilities = doc.get("required_capabilities", [])
    if not isinstance(capabilities, list) or any(c not in CAPABILITIES for c in capabilities):
        raise CatalogError("schema", f"must be a list of {', '.join(CAPABILITIES)}", checks.at(path,
                                                                                               "required_capabilities"))
    resolved = resolve_view_spec(spec, catalog, query_path)
    for source in resolved:
        profile = search_profile(catalog, source.profile)
        missing = [c for c in capabilities if c not in profile.capabilities]
        if missing:
            raise CatalogError("capability", f"search profile {profile.name} cannot do {', '.join(missing)}",
                               checks.at(path, "required_capabilities"))
    collections = sorted({c.name for source in resolved for c in source.versions})
    return {"query": doc["query"], "required_capabilities": list(capabilities), "graph": None,
            "collections": collections}


def view_spec(filled, path: str, *, max_query_chars: int) -> SearchSpec:
    """Parse a filled view query as a strict SearchSpec. ``_system`` passes the parse so that
    ``resolve_view_spec`` rejects it with its own code (``reserved``) and message."""
    try:
        return parse_search_spec(filled, max_query_chars=max_query_chars, allow_system=True)
    except (SpecError, QueryTooLong) as error:
        raise error.relocated(checks.at(path, error.path), code="search_spec") from None


def resolve_view_spec(spec: SearchSpec, catalog: Catalog, path: str):
    try:
        return resolve_search(spec, catalog, view=True)
    except ResolveError as error:
        # Rank validation reports the ad-hoc request code; in a view it is a SearchSpec problem.
        code = "search_spec" if error.code == "request_schema" else error.code
        raise error.relocated(checks.at(path, error.path), code=code) from None


def _graph_body(doc: dict, path: str, kind: str, parameters, catalog: Catalog) -> dict:
    for key in ("query", "required_capabilities"):
        if key in doc:
            raise CatalogError("schema", f"{kind} views take no {key}", checks.at(path, key))
    code = "graph_view" if kind == "graph" else "graph_orphans_view"
    check_fixed_contract(parameters, GRAPH_PARAMETERS if kind == "graph" else ORPHAN_PARAMETERS,
                         checks.at(path, "parameters"), code=code)
    graph_path = checks.at(path, "graph")
    allowed = {"edges", *GRAPH_ROLES} | ({"nodes"} if kind == "graph_orphans" else set())
    required = allowed - set(GRAPH_ROLES)
    mapping = checks.mapping(doc.get("graph"), graph_path, allowed=allowed, required=required, code=code)
    # A role left out reads the field of its own name (reference: graph.subject defaults to subject).
    mapping = {**{role: role for role in GRAPH_ROLES}, **mapping}
    edges = catalog.value("collection", mapping["edges"]) if isinstance(mapping["edges"], str) else None
    if edges is None:
        raise CatalogError("graph_edge_collection", f"no active collection {mapping['edges']!r}", checks.at(graph_path,
                                                                                                            "edges"))
    if edges.mode not in ("event", "mixed"):
        # Links are events; a mixed collection also admits keyed links, which can be superseded
        # by a newer value of their key or retracted by a tombstone.
        raise CatalogError("graph_edge_collection", f"the edge collection {edges.name} must have mode: event or mixed",
                           checks.at(graph_path, "edges"))
    for role in GRAPH_ROLES:
        field = edges.fields.get(mapping[role]) if isinstance(mapping[role], str) else None
        if field is None or field.type != "string" or field.is_array or not field.filter:
            raise CatalogError("graph_field",
                               f"{mapping[role]!r} must be a declared string field of {edges.name} with filter: true",
                               checks.at(graph_path, role))
        if field.path[0] == "annotations" and field.path[1] not in edges.required_processors:
            raise CatalogError("required_annotation",
                               f"{mapping[role]} reads an annotation that is not from a required processor",
                               checks.at(graph_path, role))
    collections = [edges.name]
    if kind == "graph_orphans":
        nodes = catalog.value("collection", mapping["nodes"]) if isinstance(mapping["nodes"], str) else None
        if nodes is None or nodes.mode not in ("keyed", "mixed"):
            raise CatalogError("graph_node_collection",
                               f"{mapping['nodes']!r} must be an active keyed or mixed collection",
                               checks.at(graph_path, "nodes"))
        collections.append(nodes.name)
    return {"query": None, "required_capabilities": [], "graph": dict(mapping), "collections": sorted(collections)}


def build(body: dict) -> View:
    kind = body["kind"]
    parameters = parse_parameters({item["name"]: item["spec"] for item in body["parameters"]}, "parameters")
    if kind != "search":
        parameters = check_fixed_contract(parameters, GRAPH_PARAMETERS if kind == "graph" else ORPHAN_PARAMETERS,
                                          "parameters", code="graph_view" if kind == "graph" else "graph_orphans_view")
    graph = body["graph"]
    return View(
        name=body["name"], version=body["version"], kind=kind, parameters=parameters,
        query=MappingProxyType(body["query"]) if body["query"] is not None else None,
        required_capabilities=tuple(body["required_capabilities"]),
        graph=GraphMapping(graph["edges"], graph["subject"], graph["object"], graph["predicate"], graph.get("nodes"))
        if graph else None,
        collections=tuple(body["collections"]))

