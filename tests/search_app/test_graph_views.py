"""Graph views and orphan reports through ``POST /views/{name}/query`` over real PostgreSQL
(views-and-search "Graph views", "Orphan reports"; reference 7.2 item 53, A.4 rows 4-6).

The fixture catalog ``fixtures/catalogs/graph`` maps custom field names (src/dst/rel) onto
subject/object/predicate. Its graph (the same shape as test_graph_walk.py, with real ids):

    auth -uses-> billing -uses-> core -uses-> auth      auth -owns-> docs -uses-> core
    billing -owns-> auth      billing -uses-> email (written under another entity)
"""
import pytest

from catalog_app.models import Record, Workspace
from catalog_app.services.record_ingest import record_ingest_batch
from memseek_site.errors import ApiError
from tests.search_app.graph_factories import (enrich, link, load_graph_catalog, page, query_view, ready_links,
                                              write)

GRAPH_BACKEND = [{"kind": "graph", "name": "postgresql"}]
EDGES = {"e1": ("auth", "billing", "uses"), "e2": ("billing", "core", "uses"), "e3": ("core", "auth", "uses"),
         "e4": ("auth", "docs", "owns"), "e5": ("docs", "core", "uses"), "e6": ("billing", "auth", "owns"),
         "e7": ("billing", "email", "uses")}
# Every path from auth up to depth 3, by direction, as (nodes, edge names).
PATHS = {
    "out": [("auth billing", "e1"), ("auth docs", "e4"), ("auth billing core", "e1 e2"),
            ("auth billing email", "e1 e7"), ("auth docs core", "e4 e5")],
    "in": [("auth billing", "e6"), ("auth core", "e3"), ("auth core billing", "e3 e2"), ("auth core docs", "e3 e5")],
    "both": [("auth billing", "e1"), ("auth billing", "e6"), ("auth core", "e3"), ("auth docs", "e4"),
             ("auth billing core", "e1 e2"), ("auth billing core", "e6 e2"), ("auth billing email", "e1 e7"),
             ("auth billing email", "e6 e7"), ("auth core billing", "e3 e2"), ("auth core docs", "e3 e5"),
             ("auth docs core", "e4 e5"), ("auth billing core docs", "e1 e2 e5"),
             ("auth billing core docs", "e6 e2 e5"), ("auth core billing email", "e3 e2 e7"),
             ("auth docs core billing", "e4 e5 e2")],
}


@pytest.fixture
def graph(workspace):
    """The graph above, every link ready; returns {edge name: record id}."""
    load_graph_catalog(workspace)
    names = list(EDGES)
    items = [link(*EDGES[name], entity="ops" if name == "e7" else "site") for name in names]
    return dict(zip(names, ready_links(workspace, items)))


def tombstone(collection: str, key: str, parent: str) -> dict:
    kind = "page" if collection == "pages" else "link"
    return {"entity": "site", "collection": collection, "type": kind, "key": key, "tombstone": True,
            "derived_from": [parent]}


def link_object(record_id, src, dst, rel):
    text = f"{src} {rel} {dst}"
    return {"id": record_id, "text": text, "subject": src, "object": dst, "predicate": rel,
            "content": {"text": text, "src": src, "dst": dst, "rel": rel}}


def expected_walk(graph, direction, depth, limit=100):
    """Paths (sorted by depth, nodes, edge ids), nodes, citations and truncated, from PATHS."""
    paths = [{"nodes": nodes.split(), "edge_ids": [graph[name] for name in edges.split()], "depth": len(edges.split())}
             for nodes, edges in PATHS[direction] if len(edges.split()) <= depth]
    paths.sort(key=lambda path: (path["depth"], path["nodes"], path["edge_ids"]))
    truncated = len(paths) > limit
    paths = paths[:limit]
    by_id = {record_id: name for name, record_id in graph.items()}
    used = list(dict.fromkeys(edge for path in paths for edge in path["edge_ids"]))
    citations = [link_object(edge, *EDGES[by_id[edge]]) for edge in used]
    nodes = sorted({node for path in paths for node in path["nodes"]})
    return paths, nodes, citations, truncated


def walk_view(api, status=200, **parameters):
    return query_view(api, "page_graph", parameters, status)


# --- the response ------------------------------------------------------------------------------------

def test_graph_view_answers_with_the_view_wrapper_and_the_walk(api, graph):
    body = walk_view(api, seed="auth", depth=2)
    g = graph
    citations = [link_object(g["e1"], "auth", "billing", "uses"), link_object(g["e4"], "auth", "docs", "owns"),
                 link_object(g["e2"], "billing", "core", "uses"), link_object(g["e7"], "billing", "email", "uses"),
                 link_object(g["e5"], "docs", "core", "uses")]
    assert list(body) == ["view", "parameters", "hits", "input_record_ids", "nodes", "paths", "citations",
                          "truncated", "profiles", "backend"]
    assert body == {
        "view": {"name": "page_graph", "version": 1, "hash": body["view"]["hash"]},
        "parameters": {"seed": "auth", "predicates": [], "direction": "out", "depth": 2, "limit": 20},
        "hits": citations,
        "input_record_ids": [g["e1"], g["e4"], g["e2"], g["e7"], g["e5"]],
        "nodes": ["auth", "billing", "core", "docs", "email"],
        "paths": [{"nodes": ["auth", "billing"], "edge_ids": [g["e1"]], "depth": 1},
                  {"nodes": ["auth", "docs"], "edge_ids": [g["e4"]], "depth": 1},
                  {"nodes": ["auth", "billing", "core"], "edge_ids": [g["e1"], g["e2"]], "depth": 2},
                  {"nodes": ["auth", "billing", "email"], "edge_ids": [g["e1"], g["e7"]], "depth": 2},
                  {"nodes": ["auth", "docs", "core"], "edge_ids": [g["e4"], g["e5"]], "depth": 2}],
        "citations": citations, "truncated": False, "profiles": ["pg_default"], "backend": GRAPH_BACKEND,
    }
    assert isinstance(body["view"]["hash"], str) and body["view"]["hash"]


def test_defaults_walk_one_link_out(api, graph):
    body = walk_view(api, seed="auth")
    assert body["parameters"] == {"seed": "auth", "predicates": [], "direction": "out", "depth": 1, "limit": 20}
    assert [path["nodes"] for path in body["paths"]] == [["auth", "billing"], ["auth", "docs"]]


@pytest.mark.parametrize("direction", ["out", "in", "both"])
@pytest.mark.parametrize("depth", [1, 2, 3])
def test_walks_follow_the_direction_to_the_depth(api, graph, direction, depth):
    paths, nodes, citations, truncated = expected_walk(graph, direction, depth)
    body = walk_view(api, seed="auth", direction=direction, depth=depth, limit=100)
    assert body["paths"] == paths
    assert body["nodes"] == nodes
    assert body["citations"] == body["hits"] == citations
    assert body["input_record_ids"] == [citation["id"] for citation in citations]
    assert body["truncated"] is truncated is False


def test_every_path_has_one_more_node_than_links_and_never_revisits(api, graph):
    for path in walk_view(api, seed="auth", direction="both", depth=4, limit=100)["paths"]:
        assert len(path["nodes"]) == path["depth"] + 1 == len(path["edge_ids"]) + 1
        assert len(set(path["nodes"])) == len(path["nodes"])


@pytest.mark.parametrize("direction, predicates, expected", [
    ("out", ["owns"], [["auth", "docs"]]),
    ("both", ["owns"], [["auth", "billing"], ["auth", "docs"]]),
    ("in", ["owns"], [["auth", "billing"]]),
    ("out", ["nothing"], []),
])
def test_predicates_restrict_which_links_are_followed(api, graph, direction, predicates, expected):
    body = walk_view(api, seed="auth", direction=direction, depth=3, predicates=predicates)
    assert [path["nodes"] for path in body["paths"]] == expected
    assert {hit["predicate"] for hit in body["hits"]} <= set(predicates)
    if not expected:
        assert body["nodes"] == [] and body["hits"] == [] and body["truncated"] is False


def test_listing_every_predicate_is_the_same_as_listing_none(api, graph):
    everything = walk_view(api, seed="auth", direction="both", depth=3, limit=100)
    listed = walk_view(api, seed="auth", direction="both", depth=3, limit=100, predicates=["owns", "uses"])
    assert listed["paths"] == everything["paths"]


@pytest.mark.parametrize("limit, truncated", [(5, False), (4, True), (1, True)])
def test_limit_caps_paths_and_truncated_reports_one_more(api, graph, limit, truncated):
    paths, nodes, citations, expected_truncated = expected_walk(graph, "out", 3, limit)
    body = walk_view(api, seed="auth", depth=3, limit=limit)
    assert (body["paths"], body["nodes"], body["citations"]) == (paths, nodes, citations)
    assert body["truncated"] is expected_truncated is truncated


def test_a_seed_is_trimmed(api, graph):
    assert walk_view(api, seed="  auth ", depth=2)["paths"] == walk_view(api, seed="auth", depth=2)["paths"]


def test_a_seed_without_links_reaches_nothing(api, graph):
    body = walk_view(api, seed="nowhere", direction="both", depth=4)
    assert (body["paths"], body["nodes"], body["hits"], body["truncated"]) == ([], [], [], False)


# --- which links are live ------------------------------------------------------------------------

def test_walks_skip_unprocessed_draft_superseded_and_retracted_links(api, workspace):
    load_graph_catalog(workspace)
    live = ready_links(workspace, [link("hub", "live"), link("hub", "drafted", status="draft"),
                                   link("hub", "stale", key="k-stale"), link("hub", "gone", key="k-gone"),
                                   link("hub", "old", key="k-pending")])
    fresh = ready_links(workspace, [link("hub", "fresh", key="k-stale")])[0]  # supersedes k-stale
    write(workspace, [tombstone("links", "k-gone", live[3])])
    unprocessed = write(workspace, [link("hub", "unready"), link("hub", "new", key="k-pending")])
    body = walk_view(api, seed="hub")
    assert body["nodes"] == ["fresh", "hub", "live"]
    assert body["input_record_ids"] == [fresh, live[0]]
    # Once processed, the unready link is followed and the newer k-pending value replaces the old.
    enrich(unprocessed)
    assert walk_view(api, seed="hub")["nodes"] == ["fresh", "hub", "live", "new", "unready"]


def test_a_newer_unready_value_hides_the_link_it_supersedes(api, workspace):
    load_graph_catalog(workspace)
    ready_links(workspace, [link("hub", "old", key="k")])
    assert walk_view(api, seed="hub")["nodes"] == ["hub", "old"]
    write(workspace, [link("hub", "new", key="k")])
    assert walk_view(api, seed="hub")["nodes"] == []


def test_an_event_edge_collection_can_neither_supersede_nor_retract_a_link(catalog):
    # The example catalog's `dependencies` is mode: event: a link there has no key, so no newer
    # value can supersede it and no tombstone can retract it; edge collections that need either
    # are declared mode: mixed (as fixtures/catalogs/graph does) and write keyed links.
    edge = {"entity": "site", "collection": "dependencies", "type": "link", "text": "a uses b",
            "content": {"from_node": "a", "to_node": "b", "relationship": "uses"}}
    with pytest.raises(ApiError) as keyed:
        record_ingest_batch(workspace=catalog, items=[{**edge, "key": "a-b"}])
    assert keyed.value.code == "record_mode"
    with pytest.raises(ApiError) as tombstone:
        record_ingest_batch(workspace=catalog, items=[{"entity": "site", "collection": "dependencies",
                                                       "type": "link", "tombstone": True,
                                                       "derived_from": ["00000000-0000-0000-0000-000000000001"]}])
    assert tombstone.value.code == "tombstone"


def test_another_workspaces_links_are_never_used(api, graph, other_workspace_api):
    other = load_graph_catalog(Workspace.objects.get(name="other-co"))
    ready_links(other, [link("auth", "intruder"), link("intruder", "auth")])
    assert "intruder" not in walk_view(api, seed="auth", direction="both", depth=4, limit=100)["nodes"]
    body = query_view(other_workspace_api, "page_graph", {"seed": "auth", "direction": "both", "depth": 4})
    assert body["nodes"] == ["auth", "intruder"]


# --- parameters and deployment ceilings -------------------------------------------------------------

@pytest.mark.parametrize("parameters, code, path", [
    ({"seed": "auth", "depth": 0}, "view_parameter", "depth"),
    ({"seed": "auth", "depth": 17}, "view_parameter", "depth"),
    ({"seed": "auth", "depth": 5}, "graph_depth", "depth"),
    ({"seed": "auth", "limit": 0}, "view_parameter", "limit"),
    ({"seed": "auth", "limit": 501}, "view_parameter", "limit"),
    ({"seed": "auth", "limit": 101}, "graph_limit", "limit"),
    ({"seed": "   "}, "view_parameter", "seed"),
    ({"seed": ""}, "view_parameter", "seed"),
    ({"seed": "x" * 129}, "view_parameter", "seed"),
    ({}, "view_parameter", "seed"),
    ({"seed": "auth", "direction": "sideways"}, "view_parameter", "direction"),
    ({"seed": "auth", "predicates": "uses"}, "view_parameter", "predicates"),
    ({"seed": "auth", "hops": 2}, "view_parameter", "hops"),
])
def test_invalid_parameters_are_rejected(api, graph, parameters, code, path):
    body = walk_view(api, 422, **parameters)
    assert (body["error"], body["path"]) == (code, path)


def test_deployment_ceilings_refuse_rather_than_clamp(api, graph, settings):
    settings.MEMSEEK = {"MAX_GRAPH_DEPTH": 2, "MAX_GRAPH_PATHS": 3}
    body = walk_view(api, seed="auth", depth=2, limit=3)
    assert len(body["paths"]) == 3 and body["truncated"] is True
    assert walk_view(api, 422, seed="auth", depth=3)["error"] == "graph_depth"
    assert walk_view(api, 422, seed="auth", limit=4)["error"] == "graph_limit"
    assert query_view(api, "page_orphans", {"limit": 4}, 422)["error"] == "graph_limit"


def test_an_unknown_view_is_404(api, graph):
    assert query_view(api, "no_such_graph", {"seed": "auth"}, 404)["error"] == "view_not_found"


# --- orphan reports ---------------------------------------------------------------------------------

@pytest.fixture
def orphan_world(workspace):
    """Pages and links covering every orphan rule; returns the expected orphans as
    (entity, key, id, text), in report order."""
    load_graph_catalog(workspace)
    keys = ["attic", "auth", "billing", "cut", "drafted", "faq", "gone", "guide", "manual", "secret", "stale", "yard"]
    pages = dict(zip(keys, write(workspace, [page(key) for key in keys])))
    zed = write(workspace, [page("zed", entity="alpha")])[0]
    write(workspace, [page("hidden", status="draft"), tombstone("pages", "gone", pages["gone"])])
    faq = write(workspace, [page("faq", text="page faq, revised")])[0]  # the faq page's current revision
    links = ready_links(workspace, [
        link("auth", "billing"),
        link("drafted", "auth", status="draft"),  # a draft link is not live
        link("stale", "auth", key="k-stale"),  # superseded below
        link("cut", "auth", key="k-cut"),  # retracted below
        link("faq", "auth", derived_from=[pages["faq"]]),  # derived from an outdated revision
        link("manual", "auth", derived_from=[pages["manual"]]),  # derived from the current revision
        link("guide", "auth"),  # written directly
    ])
    ready_links(workspace, [link("auth", "billing", key="k-stale")])
    write(workspace, [tombstone("links", "k-cut", links[3]), link("secret", "auth")])  # the link stays unready
    return [("alpha", "zed", zed, "page zed"), ("site", "attic", pages["attic"], "page attic"),
            ("site", "cut", pages["cut"], "page cut"), ("site", "drafted", pages["drafted"], "page drafted"),
            ("site", "faq", faq, "page faq, revised"), ("site", "secret", pages["secret"], "page secret"),
            ("site", "stale", pages["stale"], "page stale"), ("site", "yard", pages["yard"], "page yard")]


def orphan_objects(expected):
    return [{"id": record_id, "entity": entity, "key": key, "text": text, "content": {"text": text}}
            for entity, key, record_id, text in expected]


def test_orphan_report_lists_current_nodes_without_live_links(api, orphan_world):
    body = query_view(api, "page_orphans", {})
    orphans = orphan_objects(orphan_world)
    assert list(body) == ["view", "parameters", "hits", "orphans", "input_record_ids", "truncated", "profiles",
                          "backend"]
    assert body == {"view": {"name": "page_orphans", "version": 1, "hash": body["view"]["hash"]},
                    "parameters": {"limit": 50}, "hits": orphans, "orphans": orphans,
                    "input_record_ids": [orphan["id"] for orphan in orphans], "truncated": False,
                    "profiles": ["pg_default"], "backend": GRAPH_BACKEND}


@pytest.mark.parametrize("limit, truncated", [(8, False), (9, False), (7, True), (1, True)])
def test_orphan_limit_cuts_in_entity_and_key_order(api, orphan_world, limit, truncated):
    body = query_view(api, "page_orphans", {"limit": limit})
    assert body["orphans"] == body["hits"] == orphan_objects(orphan_world)[:limit]
    assert body["truncated"] is truncated


@pytest.mark.parametrize("limit, code", [(0, "view_parameter"), (501, "view_parameter"), (101, "graph_limit")])
def test_orphan_limit_bounds(api, orphan_world, limit, code):
    body = query_view(api, "page_orphans", {"limit": limit}, 422)
    assert (body["error"], body["path"]) == (code, "limit")


def test_a_node_stops_being_an_orphan_once_its_link_is_processed(api, orphan_world, workspace):
    pending = Record.objects.get(workspace=workspace, collection="links", enriched_at__isnull=True, tombstone=False)
    enrich([pending.id])
    keys = [orphan["key"] for orphan in query_view(api, "page_orphans", {})["orphans"]]
    assert keys == ["zed", "attic", "cut", "drafted", "faq", "stale", "yard"]


def test_another_workspaces_links_and_nodes_are_never_used(api, orphan_world, other_workspace_api):
    other = load_graph_catalog(Workspace.objects.get(name="other-co"))
    write(other, [page("lonely")])
    ready_links(other, [link("attic", "yard"), link("zed", "faq")])
    assert query_view(api, "page_orphans", {})["orphans"] == orphan_objects(orphan_world)
    assert [o["key"] for o in query_view(other_workspace_api, "page_orphans", {})["orphans"]] == ["lonely"]


def test_orphan_reports_compare_a_node_with_the_links_of_its_own_entity(api, orphan_world, workspace):
    # A link of entity "site" naming "zed" does not link alpha's page "zed"; a link of alpha does.
    ready_links(workspace, [link("zed", "attic")])
    assert "zed" in [o["key"] for o in query_view(api, "page_orphans", {})["orphans"]]
    ready_links(workspace, [link("zed", "elsewhere", entity="alpha")])
    assert "zed" not in [o["key"] for o in query_view(api, "page_orphans", {})["orphans"]]
