"""Graph views (``kind: graph``), orphan reports (``kind: graph_orphans``) and the walk behind
``graph_boost``."""
from __future__ import annotations

from dataclasses import dataclass

from catalog_app.catalog.registry import Catalog
from memseek_site.conf import memseek_setting
from memseek_site.errors import ApiError

from .store import LinkRecord, LinkStore, current_nodes
from .walk import Walk, walk

BACKEND = [{"kind": "graph", "name": "postgresql"}]


def check_walk_bounds(depth: int, limit: int, *, path_prefix: str = "") -> None:
    """Deployment ceilings: above them the request is refused, never clamped."""
    if depth > memseek_setting("MAX_GRAPH_DEPTH"):
        raise ApiError("graph_depth", f"depth {depth} exceeds this deployment's MAX_GRAPH_DEPTH "
                       f"{memseek_setting('MAX_GRAPH_DEPTH')}", path=f"{path_prefix}depth")
    if limit > memseek_setting("MAX_GRAPH_PATHS"):
        raise ApiError("graph_limit", f"limit {limit} exceeds this deployment's MAX_GRAPH_PATHS "
                       f"{memseek_setting('MAX_GRAPH_PATHS')}", path=f"{path_prefix}limit")


def _link_object(record: LinkRecord) -> dict:
    link = record.link
    return {"id": link.id, "text": record.text, "subject": link.subject, "object": link.object,
            "predicate": link.predicate, "content": record.content}


def _store(workspace, catalog: Catalog, view) -> LinkStore:
    mapping = {"subject": view.graph.subject, "object": view.graph.object, "predicate": view.graph.predicate}
    return LinkStore(workspace_id=workspace.pk, catalog=catalog, edges=view.graph.edges, mapping=mapping)


def _profiles(catalog: Catalog, view) -> list[str]:
    return sorted({catalog.value("collection", name).search_profile for name in view.collections
                   if catalog.value("collection", name) is not None})


def graph_view_run(*, workspace, catalog: Catalog, view, parameters: dict, wrapper: dict) -> dict:
    if view.kind == "graph_orphans":
        return _orphans(workspace, catalog, view, parameters, wrapper)
    seed = parameters["seed"].strip()
    if not 1 <= len(seed) <= 128:
        raise ApiError("view_parameter", "seed: must be 1 to 128 characters after trimming", path="seed")
    check_walk_bounds(parameters["depth"], parameters["limit"])
    seen: dict[str, LinkRecord] = {}
    store = _store(workspace, catalog, view)
    result = walk(seed, depth=parameters["depth"], limit=parameters["limit"],
                  neighbours=store.neighbours(direction=parameters["direction"],
                                              predicates=tuple(parameters["predicates"]), seen=seen))
    citations = [_link_object(seen[link.id]) for link in result.links]
    return {**wrapper, "hits": citations, "input_record_ids": [c["id"] for c in citations], "nodes": result.nodes,
            "paths": [{"nodes": list(p.nodes), "edge_ids": [link.id for link in p.links], "depth": p.depth}
                      for p in result.paths],
            "citations": citations, "truncated": result.truncated, "profiles": _profiles(catalog, view),
            "backend": BACKEND}


def _orphans(workspace, catalog: Catalog, view, parameters: dict, wrapper: dict) -> dict:
    limit = parameters["limit"]
    check_walk_bounds(1, limit)
    linked = _store(workspace, catalog, view).linked_node_names()
    orphans = [{"id": str(record_id), "entity": entity, "key": key, "text": text, "content": content}
               for record_id, entity, key, text, content in current_nodes(workspace_id=workspace.pk,
                                                                         collection=view.graph.nodes)
               if (entity, key) not in linked and (entity, entity) not in linked]
    page = orphans[:limit]
    return {**wrapper, "hits": page, "orphans": page, "input_record_ids": [o["id"] for o in page],
            "truncated": len(orphans) > limit, "profiles": _profiles(catalog, view), "backend": BACKEND}


@dataclass(frozen=True, slots=True)
class BoostWalk:
    distances: dict[str, int]
    edge_count: int


def graph_boost_walk(*, workspace, catalog: Catalog, graph: str | None, anchor: str, depth: int,
                     limit: int) -> BoostWalk:
    """Walk both directions from ``anchor`` over the named (or only active) graph view's links."""
    check_walk_bounds(depth, limit, path_prefix="graph_boost.")
    graphs = [v for v in catalog.active_values("view").values() if v.kind == "graph"]
    if graph is not None:
        view = catalog.value("view", graph)
        if view is None or view.kind != "graph":
            raise ApiError("graph_unavailable", f"no active graph view named {graph!r}", path="graph_boost.graph")
    elif len(graphs) == 1:
        view = graphs[0]
    elif not graphs:
        raise ApiError("graph_unavailable", "graph_boost needs an active graph view; none is loaded",
                       path="graph_boost")
    else:
        raise ApiError("graph_ambiguous", f"{len(graphs)} graph views are active; name one in graph_boost.graph",
                       path="graph_boost.graph")
    store = _store(workspace, catalog, view)
    seen: dict[str, LinkRecord] = {}
    result: Walk = walk(anchor, depth=depth, limit=limit,
                        neighbours=store.neighbours(direction="both", predicates=(), seen=seen))
    return BoostWalk(result.distances(anchor), len(result.links))

