"""``graph_boost`` on ``POST /search`` (views-and-search "Graph proximity boost"; reference 7.2
item 12, A.1 step 12, A.4 row 7): results whose key or entity the anchor's walk reaches get
``weight / (distance + 1)`` added, nearest node wins, and everything is re-sorted and rescaled.

Text searches rank with ``[score, priority]`` so every value is an exact stored number and the
arithmetic can be checked with ``==``. Links (fixtures/catalogs/graph):

    auth -> billing -> core -> docs        billing -> pending (never processed)
"""
from datetime import datetime, timedelta, timezone

import pytest

from tests.search_app.graph_factories import (article, catalog_copy, link, load_graph_catalog, ready_links, search,
                                              write)

T0 = datetime(2026, 7, 1, 10, 0, tzinfo=timezone.utc)
SCORED = {"scored": True, "score_semantics": "query_relative", "score_range": [0.0, 1.0], "normalization": "min_max",
          "normalization_scope": "ranked_candidates", "calibrated": False, "higher_is_better": True,
          "native_score_field": "rank_score"}
TEXT = {"q": "invoice", "mode": "text", "scope": {"collections": ["articles"]}, "rank": ["score", "priority"],
        "k": 20, "include": ["entity", "key"]}
# name: (entity, key, priority, topic); the anchor is billing.
ARTICLES = {
    "unlinked_high": ("cust-a", None, 0.9, "e"),
    "key_docs": ("cust-b", "docs", 0.5, "d"),  # distance 2 by key
    "key_core": ("cust-c", "core", 0.3, "c"),  # distance 1 by key
    "entity_billing": ("billing", None, 0.2, "b"),  # the anchor itself, by entity
    "entity_auth_key_docs": ("auth", "docs", 0.15, "a"),  # entity at 1, key at 2: the nearest counts
    "unlinked_low": ("cust-d", "zeta", 0.1, "f"),
    "behind_unready_link": ("pending", None, 0.05, "g"),
}
DISTANCE = {"key_docs": 2, "key_core": 1, "entity_billing": 0, "entity_auth_key_docs": 1}


@pytest.fixture
def world(workspace):
    """The links above and the articles of ARTICLES; returns {name: id}."""
    load_graph_catalog(workspace)
    ready_links(workspace, [link("auth", "billing"), link("billing", "core"), link("core", "docs")])
    write(workspace, [link("billing", "pending")])
    items = [article(f"invoice for {name}", entity=entity, key=key, priority=priority, topic=topic,
                     occurred_at=(T0 + timedelta(hours=index)).isoformat())
             for index, (name, (entity, key, priority, topic)) in enumerate(ARTICLES.items())]
    return dict(zip(ARTICLES, write(workspace, items)))


def names(world, body):
    by_id = {record_id: name for name, record_id in world.items()}
    return [by_id[hit["id"]] for hit in body["hits"]]


def test_a_connected_record_is_lifted_to_rank_1(api, workspace):
    load_graph_catalog(workspace)
    ready_links(workspace, [link("billing", "core")])
    top, connected = write(workspace, [article("invoice overdue", priority=0.5),
                                       article("invoice for core", key="core", priority=0.1)])
    plain = search(api, TEXT)
    assert [hit["id"] for hit in plain["hits"]] == [top, connected] and "graph_boost" not in plain
    body = search(api, {**TEXT, "graph_boost": {"anchor": "billing", "depth": 1, "weight": 1.0}})
    assert [hit["id"] for hit in body["hits"]] == [connected, top]
    assert body["graph_boost"] == {"anchor": "billing", "depth": 1, "weight": 1.0, "matched_records": 1,
                                   "edge_count": 1}
    assert body["ranking"] == {"kind": "rank_expression", **SCORED}


@pytest.mark.parametrize("weight", [1.0, 0.05, 0.3])
def test_boosted_value_is_previous_plus_weight_over_distance_plus_one(api, world, weight):
    plain = {hit["id"]: hit["rank_score"] for hit in search(api, TEXT)["hits"]}
    body = search(api, {**TEXT, "graph_boost": {"anchor": "billing", "weight": weight}})
    expected = {record_id: plain[record_id] + (weight / (DISTANCE[name] + 1) if name in DISTANCE else 0.0)
                for name, record_id in world.items()}
    assert {hit["id"]: hit["rank_score"] for hit in body["hits"]} == expected
    order = sorted(world, key=lambda name: -expected[world[name]])
    assert names(world, body) == order
    low, high = min(expected.values()), max(expected.values())
    assert [hit["score"] for hit in body["hits"]] == pytest.approx(
        [(expected[world[name]] - low) / (high - low) for name in order])
    assert body["graph_boost"] == {"anchor": "billing", "depth": 2, "weight": weight, "matched_records": 4,
                                   "edge_count": 3}


def test_with_weight_1_the_anchor_and_its_neighbours_move_up(api, world):
    body = search(api, {**TEXT, "graph_boost": {"anchor": "billing", "weight": 1.0}})
    assert names(world, body) == ["entity_billing", "unlinked_high", "key_docs", "key_core", "entity_auth_key_docs",
                                  "unlinked_low", "behind_unready_link"]


def test_depth_limits_the_nodes_that_match(api, world):
    body = search(api, {**TEXT, "graph_boost": {"anchor": "billing", "depth": 1, "weight": 1.0}})
    assert body["graph_boost"]["matched_records"] == 3  # key_docs is two links away
    assert body["graph_boost"]["edge_count"] == 2
    plain = {hit["id"]: hit["rank_score"] for hit in search(api, TEXT)["hits"]}
    boosted = {hit["id"]: hit["rank_score"] for hit in body["hits"]}
    assert boosted[world["key_docs"]] == plain[world["key_docs"]]
    assert boosted[world["entity_auth_key_docs"]] == plain[world["entity_auth_key_docs"]] + 0.5


def test_walk_limit_bounds_the_links_used(api, world):
    body = search(api, {**TEXT, "graph_boost": {"anchor": "billing", "weight": 1.0, "limit": 1}})
    # The first path in walk order is billing -> auth (auth sorts before core).
    assert body["graph_boost"]["edge_count"] == 1
    assert body["graph_boost"]["matched_records"] == 2  # entity_billing (the anchor) and entity_auth_key_docs


def test_an_anchor_nothing_links_to_still_matches_itself(api, world):
    body = search(api, {**TEXT, "graph_boost": {"anchor": "cust-a", "weight": 1.0}})
    assert body["graph_boost"] == {"anchor": "cust-a", "depth": 2, "weight": 1.0, "matched_records": 1,
                                   "edge_count": 0}
    assert names(world, body)[0] == "unlinked_high"


def test_k_applies_after_the_boost_and_bounds_cover_the_boosted_pool(api, world):
    full = search(api, {**TEXT, "graph_boost": {"anchor": "billing", "weight": 1.0}})
    top2 = search(api, {**TEXT, "k": 2, "graph_boost": {"anchor": "billing", "weight": 1.0}})
    assert top2["hits"] == full["hits"][:2]
    assert top2["hits"][1]["score"] < 1.0


# --- which graph ---------------------------------------------------------------------------------

SECOND_GRAPH = """views:
  - name: reverse_graph
    version: 1
    active: true
    kind: graph
    graph: {edges: links, subject: dst, object: src, predicate: rel}
    parameters:
      seed: {type: string, required: true}
      predicates: {type: string_array, default: []}
      direction: {type: string, default: out}
      depth: {type: integer, default: 1}
      limit: {type: integer, default: 20}
"""


def test_without_a_graph_view_graph_boost_is_unavailable(api, workspace, tmp_path):
    load_graph_catalog(workspace, catalog_copy(tmp_path, drop=("views/graph.yaml",)))
    body = search(api, {**TEXT, "graph_boost": {"anchor": "billing"}}, 422)
    assert (body["error"], body["path"]) == ("graph_unavailable", "graph_boost")


@pytest.mark.parametrize("graph", ["page_orphans", "no_such_view"])
def test_naming_something_that_is_not_an_active_graph_view_is_unavailable(api, world, graph):
    body = search(api, {**TEXT, "graph_boost": {"anchor": "billing", "graph": graph}}, 422)
    assert (body["error"], body["path"]) == ("graph_unavailable", "graph_boost.graph")


def test_two_active_graph_views_are_ambiguous_unless_one_is_named(api, workspace, tmp_path):
    directory = catalog_copy(tmp_path, files={"views/second.yaml": SECOND_GRAPH})
    load_graph_catalog(workspace, directory)
    ready_links(workspace, [link("billing", "core")])
    write(workspace, [article("invoice top", priority=0.5), article("invoice core", key="core", priority=0.1)])
    body = search(api, {**TEXT, "graph_boost": {"anchor": "billing"}}, 422)
    assert (body["error"], body["path"]) == ("graph_ambiguous", "graph_boost.graph")
    for graph in ("page_graph", "reverse_graph"):
        named = search(api, {**TEXT, "graph_boost": {"anchor": "billing", "graph": graph, "weight": 1.0}})
        assert named["graph_boost"]["matched_records"] == 1 and named["hits"][0]["key"] == "core"


@pytest.mark.parametrize("graph_boost, path", [
    ({"anchor": "  "}, "graph_boost.anchor"),
    ({"anchor": "x" * 129}, "graph_boost.anchor"),
    ({"anchor": "billing", "depth": 5}, "graph_boost.depth"),
    ({"anchor": "billing", "depth": 0}, "graph_boost.depth"),
    ({"anchor": "billing", "weight": 0}, "graph_boost.weight"),
    ({"anchor": "billing", "weight": 1.5}, "graph_boost.weight"),
    ({"anchor": "billing", "limit": 101}, "graph_boost.limit"),
    ({"anchor": "billing", "hops": 1}, "graph_boost.hops"),
])
def test_graph_boost_settings_are_checked(api, world, graph_boost, path):
    body = search(api, {**TEXT, "graph_boost": graph_boost}, 422)
    assert (body["error"], body["path"]) == ("request_schema", path)


def test_deployment_ceilings_apply_to_the_boost_walk(api, world, settings):
    settings.MEMSEEK = {"MAX_GRAPH_DEPTH": 1, "MAX_GRAPH_PATHS": 5}
    body = search(api, {**TEXT, "graph_boost": {"anchor": "billing", "depth": 2}}, 422)
    assert (body["error"], body["path"]) == ("graph_depth", "graph_boost.depth")
    body = search(api, {**TEXT, "graph_boost": {"anchor": "billing", "depth": 1, "limit": 6}}, 422)
    assert (body["error"], body["path"]) == ("graph_limit", "graph_boost.limit")


# --- structured and combined searches ------------------------------------------------------------

def test_on_a_structured_search_boost_reorders_but_reports_no_scores(api, world):
    structured = {"mode": "structured", "scope": {"collections": ["articles"]}, "order_by": [{"field": "topic"}],
                  "k": 20}
    plain = search(api, structured)
    assert names(world, plain) == ["entity_auth_key_docs", "entity_billing", "key_core", "key_docs",
                                   "unlinked_high", "unlinked_low", "behind_unready_link"]
    body = search(api, {**structured, "graph_boost": {"anchor": "billing", "weight": 1.0}})
    # Proximity first (1, 1/2, 1/2, 1/3; ties newest first), then the unmatched rows by recency:
    # order_by no longer governs the order (reference A.4 row 7).
    assert names(world, body) == ["entity_billing", "entity_auth_key_docs", "key_core", "key_docs",
                                  "behind_unready_link", "unlinked_low", "unlinked_high"]
    assert body["ranking"] == {"kind": "structured", "scored": False}
    assert all(hit["score"] is None and "rank_score" not in hit for hit in body["hits"])
    assert body["graph_boost"]["matched_records"] == 4


def test_on_combined_searches_the_boost_adds_to_the_rrf_value(api, world):
    fused = {"q": "invoice", "k": 20, "fuse": {"kind": "rrf"}, "sources": [
        {"name": "all", "mode": "text", "scope": {"collections": ["articles"]}, "rank": ["score", "priority"]},
        {"name": "keyed", "mode": "text", "scope": {"collections": ["articles"], "keyed": True},
         "rank": ["score", "priority"]}]}
    plain = {hit["id"]: hit for hit in search(api, fused)["hits"]}
    body = search(api, {**fused, "graph_boost": {"anchor": "billing", "weight": 0.002}})
    assert body["ranking"] == {"kind": "rrf", **SCORED}
    for hit in body["hits"]:
        name = next(name for name, record_id in world.items() if record_id == hit["id"])
        bonus = 0.002 / (DISTANCE[name] + 1) if name in DISTANCE else 0.0
        assert hit["rank_score"] == plain[hit["id"]]["rank_score"] + bonus
        assert hit["source_ranks"] == plain[hit["id"]]["source_ranks"]
    assert [hit["rank_score"] for hit in body["hits"]] == sorted((h["rank_score"] for h in body["hits"]), reverse=True)
