"""The candidate legs: what each finds, the caller's scope compiled into every leg (a record
outside it is never proposed, even when the leg is handed foreign ids), and tenant isolation of
every leg. The vector leg needs the model and lives in test_vector.py."""
import uuid

import pytest

from catalog_app.catalog.runtime import catalog_for_workspace
from catalog_app.services.workspaces import workspace_create
from retrieval_app.legs import LegHit, derivatives_leg, entity_leg, graph_leg, text_leg
from retrieval_app.request import parse_retrieve_request
from retrieval_app.scope import compile_scope
from tests.retrieval_app.factories import all_ids, at, event, fact, link, load, policy, retrieve, summary, write


def scope_of(workspace, **body):
    return compile_scope(workspace_id=workspace.pk, request=parse_retrieve_request({"query": "budget", **body}),
                         catalog=catalog_for_workspace(workspace), hide_superseded=True)


def strong(workspace, **body):
    return text_leg(scope_of(workspace, **body), "budget", cap=50)


def ids(hits):
    return [str(hit.id) for hit in hits]


@pytest.fixture
def world(workspace):
    """maria talks about the budget; acme and tom are linked to her; a summary derives from her
    meeting, and a digest from the summary."""
    load(workspace)
    ids_ = dict(zip(
        ("budget", "meeting", "lunch", "acme", "tom_fact", "maria_link", "tom_link", "other"),
        write(workspace, [
            fact("budget", "budget is 50k", topic="finance", labels=["q3", "plan"]),
            event("budget meeting with finance", hours=2, topic="finance"),
            event("lunch at noon", hours=5, topic="social"),
            fact("size", "acme has 12 staff", entity="acme", topic="company"),
            fact("tom", "tom is the account manager", entity="crm"),
            link("acme", "maria", "customer_of"),
            link("maria", "tom", "works_with"),
            event("unrelated chat", entity="zoe"),
        ])))
    summary_id, = write(workspace, [summary("summary of the meeting", [ids_["meeting"]], hours=3)])
    digest_id, = write(workspace, [summary("digest of summaries", [summary_id], hours=4)])
    return {**ids_, "summary": summary_id, "digest": digest_id}


def test_text_leg_ranks_lexical_matches(world, workspace):
    hits = strong(workspace)
    assert set(ids(hits)) == {world["budget"], world["meeting"]}
    assert all(hit.raw > 0 for hit in hits)


def test_graph_leg_follows_links_both_ways_to_entities_keys_and_the_links_themselves(world, workspace):
    hits = graph_leg(scope_of(workspace), catalog_for_workspace(workspace), strong(workspace), cap=50)
    found = set(ids(hits))
    # acme -> maria (maria is the object) reaches acme's records; maria -> tom reaches the record keyed "tom".
    assert {world["acme"], world["tom_fact"], world["maria_link"], world["tom_link"]} <= found
    assert world["other"] not in found
    assert all(hit.raw is None and str(hit.via) in (world["budget"], world["meeting"]) for hit in hits)


def test_graph_leg_ignores_links_outside_the_time_cut(world, workspace):
    later, = write(workspace, [link("maria", "zoe", hours=100)])
    hits = graph_leg(scope_of(workspace, asOf=at(50)), catalog_for_workspace(workspace),
                     strong(workspace, asOf=at(50)), cap=50)
    assert world["other"] not in ids(hits) and later not in ids(hits)
    hits = graph_leg(scope_of(workspace), catalog_for_workspace(workspace), strong(workspace), cap=50)
    assert world["other"] in ids(hits)


def test_entity_leg_returns_the_other_records_of_strong_entities_newest_first(world, workspace):
    hits = entity_leg(scope_of(workspace), strong(workspace), cap=50)
    assert ids(hits) == [world["lunch"], world["digest"], world["summary"]]  # occurred 5, 4 and 3 hours in
    assert all(str(hit.via) in (world["budget"], world["meeting"]) for hit in hits)


def test_derivatives_leg_follows_derivation_recursively_nearest_first(world, workspace):
    hits = derivatives_leg(scope_of(workspace), strong(workspace), cap=50)
    assert ids(hits) == [world["summary"], world["digest"]]
    assert all(str(hit.via) == world["meeting"] for hit in hits)


def test_every_leg_keeps_the_entity_scope(world, workspace):
    scope = scope_of(workspace, entity="maria")
    matched = text_leg(scope, "budget", cap=50)
    for hits in (matched, graph_leg(scope, catalog_for_workspace(workspace), matched, cap=50),
                 entity_leg(scope, matched, cap=50), derivatives_leg(scope, matched, cap=50)):
        assert all(hit.entity == "maria" for hit in hits)


def test_every_leg_keeps_the_collection_and_type_scope(world, workspace):
    scope = scope_of(workspace, collections=["events", "summaries"], types=["message"])
    matched = strong(workspace)  # strong matches from an unrestricted scope: the legs must still filter
    for hits in (text_leg(scope, "budget", cap=50), graph_leg(scope, catalog_for_workspace(workspace), matched, cap=50),
                 entity_leg(scope, matched, cap=50), derivatives_leg(scope, matched, cap=50)):
        assert set(ids(hits)) <= {world["meeting"], world["lunch"]}


def test_every_leg_keeps_the_tag_filters(world, workspace):
    scope = scope_of(workspace, tags={"topic": ["finance", "company"]})
    matched = strong(workspace)
    allowed = {world["budget"], world["meeting"], world["acme"]}
    for hits in (text_leg(scope, "budget", cap=50), graph_leg(scope, catalog_for_workspace(workspace), matched, cap=50),
                 entity_leg(scope, matched, cap=50), derivatives_leg(scope, matched, cap=50)):
        assert set(ids(hits)) <= allowed
    assert set(ids(graph_leg(scope, catalog_for_workspace(workspace), matched, cap=50))) == {world["acme"]}


@pytest.mark.parametrize(("tags", "expected"), [
    ({"topic": "finance"}, {"budget", "meeting"}),
    ({"topic": ["social", "company"]}, {"lunch", "acme"}),
    ({"labels": "q3"}, {"budget"}),
    ({"labels": ["nope", "plan"]}, {"budget"}),
    ({"labels": "q3", "topic": "social"}, set()),
])
def test_tag_filters_over_declared_fields(world, workspace, api, tags, expected):
    body = retrieve(api, {"query": "budget lunch staff", "tags": tags, "raw": True})
    assert all_ids(body) == {world[name] for name in expected}


def test_tag_filters_never_hide_policies(world, workspace, api):
    policy_id, = write(workspace, [policy("Budget talk stays internal")])
    assert policy_id in all_ids(retrieve(api, {"query": "budget", "tags": {"topic": "social"}}))


@pytest.mark.parametrize(("body", "status", "code", "path"), [
    ({"tags": {"mood": "x"}}, 422, "field_reference", "tags.mood"),
    ({"tags": {"classification": "x"}}, 422, "field_permission", "tags.classification"),
    ({"tags": {"topic": 5}}, 422, "field_operand", "tags.topic"),
    ({"tags": {"topic": ["a", 5]}}, 422, "field_operand", "tags.topic[1]"),
    ({"tags": {"labels": [True]}}, 422, "field_operand", "tags.labels[0]"),
    ({"collections": ["facts", "nope"]}, 422, "unknown_collection", "collections[1]"),
    ({"collections": ["links"], "tags": {"topic": "x"}}, 422, "field_reference", "tags.topic"),
])
def test_scope_errors_name_the_request_path(world, api, body, status, code, path):
    error = retrieve(api, {"query": "budget", **body}, status=status)
    assert (error["error"], error["path"]) == (code, path)


@pytest.fixture
def two_tenants(world, workspace):
    """A second workspace holding a mirror of ``world`` plus extra links and maria records."""
    other, _ = workspace_create(name="tenant-b")
    load(other)
    mirror = write(other, [fact("budget", "budget is 99k"), event("budget meeting elsewhere", hours=2),
                           event("maria private diary", hours=9), link("maria", "zoe"), link("maria", "acme")])
    derived, = write(other, [summary("foreign summary", [mirror[1]])])
    return other, set(mirror) | {derived}, derived


def test_tenant_isolation_of_every_leg(world, workspace, two_tenants):
    other, foreign, foreign_derived = two_tenants
    scope = scope_of(workspace)
    catalog = catalog_for_workspace(workspace)
    mine = strong(workspace)
    theirs = text_leg(scope_of(other), "budget", cap=50)
    assert set(ids(theirs)) <= foreign
    for matched in (mine, theirs, mine + theirs):  # even when handed another tenant's ids
        for hits in (text_leg(scope, "budget", cap=50), graph_leg(scope, catalog, matched, cap=50),
                     entity_leg(scope, matched, cap=50), derivatives_leg(scope, matched, cap=50)):
            assert not set(ids(hits)) & foreign
    assert derivatives_leg(scope, theirs, cap=50) == []
    assert world["other"] not in ids(graph_leg(scope, catalog, mine, cap=50))  # B's maria -> zoe link


def test_tenant_isolation_end_to_end(world, workspace, two_tenants, api):
    _, foreign, _ = two_tenants
    body = retrieve(api, {"query": "budget meeting maria", "raw": True, "topN": 100, "explain": True})
    assert not all_ids(body) & foreign
    assert body["diagnostics"]["drops"]["policy"] == 0


def test_strong_matches_are_the_top_of_vector_and_text(world, workspace, api):
    body = retrieve(api, {"query": "budget", "explain": True})
    assert body["diagnostics"]["strongMatches"] == 2
    assert body["diagnostics"]["candidates"]["text"] == 2
    assert body["diagnostics"]["candidates"]["vector"] == 0  # nothing in scope is embedded


def test_no_strong_match_means_no_structural_legs(world, workspace, api):
    body = retrieve(api, {"query": "zzzz", "explain": True})
    assert body["diagnostics"]["candidates"] == {"vector": 0, "text": 0, "graph": 0, "entity": 0, "derivatives": 0}


def test_a_leg_hit_carries_its_origin():
    hit = LegHit(uuid.uuid4(), None, None, "maria", uuid.uuid4())
    assert hit.via is not None and hit.raw is None


@pytest.mark.parametrize(("body", "expected"), [
    ({"entities": ["maria", "acme"]}, {"budget", "meeting", "acme", "summary", "digest", "lunch"}),
    ({"entities": ["acme"]}, set()),  # no strong match inside the scope, so nothing reaches acme
    ({"entity": "crm"}, set()),
])
def test_entity_scope_end_to_end(world, api, body, expected):
    assert all_ids(retrieve(api, {"query": "budget", "raw": True, **body})) == {world[name] for name in expected}
