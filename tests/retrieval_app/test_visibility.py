"""Visibility compiled into every leg: a private record is visible only to its owning agent
(``agentId``), never without one; what the caller may not see is never a candidate, counted
only as policy drops; private links are not followed for other agents."""
import pytest

from catalog_app.catalog.runtime import catalog_for_workspace
from retrieval_app.legs import entity_leg, graph_leg, text_leg
from retrieval_app.request import parse_retrieve_request
from retrieval_app.scope import compile_scope
from tests.retrieval_app.factories import RETRIEVAL_CATALOG, all_ids, catalog_dir, event, fact, load, retrieve, write


@pytest.fixture
def private_world(workspace):
    load(workspace)
    return dict(zip(("shared", "mine", "theirs", "unowned", "theirs_event"), write(workspace, [
        fact("budget", "budget is 50k", visibility="shared"),
        fact("plan", "budget plan draft", visibility="private", owner="agent-1"),
        fact("memo", "budget memo for the board", visibility="private", owner="agent-2"),
        fact("note", "budget note without owner", visibility="private"),
        event("agent two budget diary", visibility="private", owner="agent-2", hours=3),
    ])))


def test_private_records_are_visible_only_to_their_owner(private_world, api):
    def delivered(**body):
        return all_ids(retrieve(api, {"query": "budget", "raw": True, **body}))

    w = private_world
    assert delivered() == {w["shared"]}
    assert delivered(agentId="agent-1") == {w["shared"], w["mine"]}
    assert delivered(agentId="agent-2") == {w["shared"], w["theirs"], w["theirs_event"]}


def test_policy_fields_are_reported(private_world, api):
    (entry,) = [e for e in retrieve(api, {"query": "budget", "agentId": "agent-1"})["sections"]["facts"]
                if e["id"] == private_world["mine"]]
    assert entry["policy"] == {"visibility": "private", "ownerAgentId": "agent-1", "classification": None}


def test_invisible_records_are_counted_as_policy_drops_without_ids(private_world, api):
    body = retrieve(api, {"query": "budget", "agentId": "agent-1", "explain": True})
    assert body["diagnostics"]["drops"]["policy"] == 3  # theirs, unowned and theirs_event share the word
    text = str(body)
    for name in ("theirs", "unowned", "theirs_event"):
        assert private_world[name] not in text
    assert retrieve(api, {"query": "budget", "agentId": "agent-2", "explain": True})["diagnostics"]["drops"][
        "policy"] == 2


def test_no_structural_leg_proposes_an_invisible_record(private_world, workspace):
    scope = compile_scope(workspace_id=workspace.pk, request=parse_retrieve_request({"query": "x", "agentId": "a"}),
                          catalog=catalog_for_workspace(workspace), hide_superseded=True)
    everyone = compile_scope(workspace_id=workspace.pk,
                             request=parse_retrieve_request({"query": "x", "agentId": "agent-2"}),
                             catalog=catalog_for_workspace(workspace), hide_superseded=True)
    matched = text_leg(everyone, "budget", cap=50)  # agent-2's view, handed to agent "a"'s legs
    assert {str(hit.id) for hit in entity_leg(scope, matched, cap=50)} <= {private_world["shared"]}
    assert {str(hit.id) for hit in text_leg(scope, "budget", cap=50)} == {private_world["shared"]}


def test_private_links_are_followed_only_for_their_owner(workspace, api, tmp_path):
    links = (RETRIEVAL_CATALOG / "collections" / "links.yaml").read_text() \
        .replace("        rel: {type: string}\n", "        rel: {type: string}\n        owner: {type: string}\n") \
        .replace("      rel: {path: content.rel, type: string, filter: true, project: true}\n",
                 "      rel: {path: content.rel, type: string, filter: true, project: true}\n"
                 "      owner: {path: content.owner, type: string, filter: true, project: true}\n")
    policy = (RETRIEVAL_CATALOG / "conf" / "retrieval.yaml").read_text() + \
        "  links: {visibility: private, owner_agent_id: owner}\n"
    load(workspace, catalog_dir(tmp_path, files={"collections/links.yaml": links, "conf/retrieval.yaml": policy}))
    write(workspace, [fact("budget", "budget is 50k"), fact("size", "acme has 12 staff", entity="acme"),
                      {"entity": "graph", "collection": "links", "type": "link", "text": "maria knows acme",
                       "content": {"src": "maria", "dst": "acme", "rel": "knows", "owner": "agent-1"}}])
    scope = lambda agent, **body: compile_scope(  # noqa: E731
        workspace_id=workspace.pk, request=parse_retrieve_request({"query": "budget", "agentId": agent, **body}),
        catalog=catalog_for_workspace(workspace), hide_superseded=True)
    catalog = catalog_for_workspace(workspace)
    reached = {hit.entity for hit in graph_leg(scope("agent-1"), catalog, text_leg(scope("agent-1"), "budget", cap=9),
                                               cap=50)}
    assert "acme" in reached
    assert graph_leg(scope("agent-9"), catalog, text_leg(scope("agent-9"), "budget", cap=9), cap=50) == []
    # The link's visibility holds even when the request does not name the edge collection.
    facts_only = scope("agent-9", collections=["facts"])
    assert graph_leg(facts_only, catalog, text_leg(facts_only, "budget", cap=9), cap=50) == []
    facts_only = scope("agent-1", collections=["facts"])
    assert [hit.entity for hit in graph_leg(facts_only, catalog, text_leg(facts_only, "budget", cap=9), cap=50)] \
        == ["acme"]
