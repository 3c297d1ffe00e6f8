"""``MemseekStore`` (LangGraph's ``BaseStore``) against a live server: namespaces are entities,
items are the current values of named facts, and each operation answers what LangGraph's own
store contract says."""
from __future__ import annotations

import asyncio

import pytest
from langgraph.store.base import GetOp, InvalidNamespaceError, Item, PutOp, SearchItem

from memseek_client import MemseekError, NotFound
from memseek_client.integrations.langgraph_store import MemseekStore

from .conftest import LIVE, require_route

pytestmark = LIVE


@pytest.fixture
def store(client):
    return MemseekStore(client)


def test_put_then_get_returns_the_value_as_written(store, client):
    value = {"food": "pizza", "count": 3, "nested": {"text": 7}, "tags": ["a", "b"]}
    store.put(("users", "ada"), "prefs", value)
    item = store.get(("users", "ada"), "prefs")
    assert isinstance(item, Item) and item.value == value
    assert item.namespace == ("users", "ada") and item.key == "prefs"
    assert item.created_at == item.updated_at and item.created_at.tzinfo is not None
    [belief] = [b for b in client.document("users.ada").beliefs if b.key == "prefs"]
    assert belief.collection == "main" and belief.type == "store_item"


def test_a_second_put_is_the_current_value_and_the_first_stays_in_history(store, client):
    store.put(("users", "bo"), "city", {"text": "Bo lives in Oslo."})
    store.put(("users", "bo"), "city", {"text": "Bo lives in Bergen."})
    assert store.get(("users", "bo"), "city").value == {"text": "Bo lives in Bergen."}
    history = client.document_history("users.bo", "main", "city")
    assert [version.text for version in history.versions] == ["Bo lives in Bergen.", "Bo lives in Oslo."]


def test_get_of_an_unknown_key_or_namespace_is_none(store):
    store.put(("users", "cy"), "known", {"text": "x"})
    assert store.get(("users", "cy"), "unknown") is None
    assert store.get(("users", "nobody", "at-all"), "known") is None


def test_delete_forgets_every_version_of_the_fact(store, client, listed_routes):
    require_route(listed_routes, "DELETE", "/records/{id}")
    store.put(("users", "di"), "job", {"text": "Di is a welder."})
    store.put(("users", "di"), "job", {"text": "Di is a plumber."})
    store.put(("users", "di"), "car", {"text": "Di drives a van."})
    ids = [version.id for version in client.document_history("users.di", "main", "job").versions]
    store.delete(("users", "di"), "job")
    assert store.get(("users", "di"), "job") is None
    assert [item.key for item in store.search(("users", "di"))] == ["car"]
    assert {item.key for item in store.search(("users", "di"), query="welder plumber")} <= {"car"}
    for record_id in ids:
        with pytest.raises(NotFound):
            client.get_record(record_id)
    store.delete(("users", "di"), "job")  # deleting what is gone changes nothing
    store.delete(("users", "nobody"), "job")
    assert store.get(("users", "di"), "car").value == {"text": "Di drives a van."}
    store.put(("users", "di"), "job", {"text": "Di is a baker."})
    assert store.get(("users", "di"), "job").value == {"text": "Di is a baker."}
    assert len(client.document_history("users.di", "main", "job").versions) == 1


def test_delete_without_forget_retracts_the_fact_and_keeps_its_history(client):
    store = MemseekStore(client, forget=False)
    store.put(("users", "el"), "job", {"text": "El is a welder."})
    store.delete(("users", "el"), "job")
    assert store.get(("users", "el"), "job") is None
    assert store.search(("users", "el")) == []
    versions = client.document_history("users.el", "main", "job").versions
    assert [version.tombstone for version in versions] == [True, False]
    store.delete(("users", "el"), "job")  # deleting what is retracted changes nothing
    assert len(client.document_history("users.el", "main", "job").versions) == 2
    store.put(("users", "el"), "job", {"text": "El is a baker."})
    assert store.get(("users", "el"), "job").value == {"text": "El is a baker."}


def test_search_without_a_query_lists_the_facts_under_a_prefix(store):
    for entity, key, value in ((("team", "red", "ann"), "role", {"text": "lead", "level": 3}),
                               (("team", "red", "ann"), "desk", {"text": "north", "level": 1}),
                               (("team", "red", "bob"), "role", {"text": "dev", "level": 2}),
                               (("team", "blue", "cat"), "role", {"text": "ops", "level": 2}),
                               (("teamwork",), "role", {"text": "not a team member", "level": 2})):
        store.put(entity, key, value)
    red = store.search(("team", "red"))
    assert [(item.namespace, item.key) for item in red] == [
        (("team", "red", "ann"), "desk"), (("team", "red", "ann"), "role"), (("team", "red", "bob"), "role")]
    assert all(isinstance(item, SearchItem) and item.score is None for item in red)
    team = store.search(("team",), filter={"level": 2})
    assert [item.namespace for item in team] == [("team", "blue", "cat"), ("team", "red", "bob")]
    assert [item.value["text"] for item in store.search(("team",), filter={"level": {"$gte": 2}}, limit=1,
                                                        offset=1)] == ["lead"]
    assert store.search(("team", "green")) == []


def test_search_with_a_query_ranks_by_meaning_within_the_prefix(store, client):
    store.put(("pets", "eve"), "dog", {"text": "Eve's dog is a black labrador called Rex."})
    store.put(("pets", "eve"), "car", {"text": "Eve drives a red bicycle to work."})
    store.put(("pets", "fay"), "dog", {"text": "Fay has a golden retriever puppy."})
    found = store.search(("pets", "eve"), query="labrador dog", limit=2)
    assert [item.key for item in found][:1] == ["dog"] and {item.namespace for item in found} == {("pets", "eve")}
    assert all(item.score is not None for item in found)
    ranked = client.search("labrador dog", mode="hybrid", k=2, include=["key"], scope={
        "collections": ["main"], "entities": ["pets.eve"], "keyed": True, "versions": "current"}).hits
    assert [(item.key, item.score) for item in found] == [(hit.key, hit.score) for hit in ranked]
    both = store.search(("pets",), query="dog", filter={"text": "Fay has a golden retriever puppy."})
    assert [(item.namespace, item.key) for item in both] == [(("pets", "fay"), "dog")]


def test_index_fields_choose_the_text_search_reads(store, client):
    store.put(("docs", "gil"), "report", {"title": "Quarterly kayak sales", "body": 12}, index=["title"])
    [belief] = client.document("docs.gil").beliefs
    assert belief.text == "Quarterly kayak sales"
    assert store.get(("docs", "gil"), "report").value == {"title": "Quarterly kayak sales", "body": 12}


def test_list_namespaces_with_prefix_suffix_and_depth(store):
    for namespace in (("orgs", "acme", "ann"), ("orgs", "acme", "bob"), ("orgs", "initech", "ann")):
        store.put(namespace, "k", {"text": "x"})
    listed = store.list_namespaces(prefix=("orgs",))
    assert listed == [("orgs", "acme", "ann"), ("orgs", "acme", "bob"), ("orgs", "initech", "ann")]
    assert store.list_namespaces(prefix=("orgs", "*"), suffix=("ann",)) == [
        ("orgs", "acme", "ann"), ("orgs", "initech", "ann")]
    assert store.list_namespaces(prefix=("orgs",), max_depth=2) == [("orgs", "acme"), ("orgs", "initech")]
    assert store.list_namespaces(prefix=("orgs",), limit=1, offset=1) == [("orgs", "acme", "bob")]


def test_abatch_runs_the_operations_in_order(store):
    results = asyncio.run(store.abatch([PutOp(("async", "hal"), "k", {"text": "one"}), GetOp(("async", "hal"), "k"),
                                        PutOp(("async", "hal"), "k", None), GetOp(("async", "hal"), "k")]))
    assert results[0] is None and results[1].value == {"text": "one"} and results[2] is None and results[3] is None


def test_a_rejected_put_raises_the_servers_error_and_writes_nothing(client):
    events_only = MemseekStore(client, collection="tickets")
    with pytest.raises(MemseekError) as failure:
        events_only.put(("users", "ivy"), "k", {"text": "x"})
    assert failure.value.status == 422 and failure.value.code == "record_mode"
    unknown = MemseekStore(client, collection="no_such_collection")
    with pytest.raises(MemseekError) as missing:
        unknown.put(("users", "ivy"), "k", {"text": "x"})
    assert 400 <= missing.value.status < 500
    assert client.timeline("users.ivy").records == ()


def test_namespaces_langgraph_refuses_and_ttls_fail_before_any_call(store, client):
    with pytest.raises(InvalidNamespaceError):
        store.put(("users", "a.b"), "k", {"text": "x"})
    with pytest.raises(NotImplementedError):
        store.put(("users", "jo"), "k", {"text": "x"}, ttl=5)
    assert client.timeline("users.jo").records == ()


def test_keys_and_labels_with_slashes_percent_and_spaces_round_trip_through_every_operation(store):
    namespace, key = ("odd/ns", "100% sure", "tab\there"), "a/b%2F c"
    store.put(namespace, key, {"text": "The odd one is a lighthouse keeper."})
    assert store.get(namespace, key).value == {"text": "The odd one is a lighthouse keeper."}
    assert [(item.namespace, item.key) for item in store.search(("odd/ns",))] == [(namespace, key)]
    assert [item.key for item in store.search(namespace, query="lighthouse keeper")] == [key]
    assert store.list_namespaces(prefix=("odd/ns",)) == [namespace]
    store.delete(namespace, key)
    assert store.get(namespace, key) is None and store.search(("odd/ns",)) == []


def test_a_key_longer_than_the_server_allows_is_refused_with_its_path(store, client):
    with pytest.raises(MemseekError) as failure:
        store.put(("users", "kim"), "k" * 129, {"text": "x"})
    assert failure.value.status == 422 and failure.value.path == "records[0].key"
    assert client.timeline("users.kim").records == ()
