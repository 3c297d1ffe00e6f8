"""POST /memory/search: the two shapes, the error table, workspaces, dates and notes
(memory-brief-and-lookups.md; the model filter is in test_memory_search_filter.py, LoCoMo in
test_memory_search_locomo.py)."""
from __future__ import annotations

import pytest

from catalog_app.models import Record
from retrieval_app.models import MemoryModelCalls
from tests.retrieval_app.memory_brief_factories import load, note, profile, turn, write

Q = "Where does Maria live?"


@pytest.fixture
def ids(workspace):
    load(workspace)
    turns = write(workspace, [
        turn("I moved to Lisbon last spring and love the tram rides", "Maria", "2024-03-01T10:00:00Z"),
        turn("You could try the Alfama walking tour in Lisbon", "assistant", "2024-03-01T10:01:00Z"),
        turn("My sister visited me in Lisbon in May", "Maria", "2024-05-20T10:00:00Z"),
        turn("Bob lives in Lisbon too, near the river", "Bob", "2024-05-21T10:00:00Z", entity="bob")])
    facts = write(workspace, [
        profile("city", "Maria lives in Lisbon", "2024-03-01T10:00:00Z"),
        profile("city", "Maria lives in Porto", "2024-06-01T10:00:00Z"),
        profile("employer", "Maria works at Acme", "2024-02-01T10:00:00Z"),
        note("Maria relocated to Lisbon", "2024-03-02T00:00:00Z", [turns[0]])])
    return {"moved": turns[0], "suggested": turns[1], "sister": turns[2], "bob": turns[3], "lisbon": facts[0],
            "porto": facts[1], "employer": facts[2], "note": facts[3]}


def search(api, body, status=200):
    response = api.post("/memory/search", body, format="json")
    assert response.status_code == status, response.content
    return response.json()


def hit_ids(body):
    return [hit["id"] for hit in body["hits"]]


def test_the_brief_holds_every_field_in_order(api, ids):
    body = search(api, {"query": Q, "entity": "maria"})
    assert list(body) == ["query", "found", "notes", "known", "facts", "hits"]
    assert body["query"] == Q and body["found"] == len(body["hits"]) == 3
    assert ids["bob"] not in hit_ids(body)
    hit = body["hits"][0]
    assert set(hit) >= {"id", "path", "roles", "text", "content"} and hit["content"] == "stored"
    assert hit["path"] == f"passages/turns/maria/{hit['id']}"


def test_known_folds_current_facts_newest_first_with_the_day_said(api, ids):
    known = search(api, {"query": Q, "entity": "maria"})["known"]
    assert [(k["attribute"], k["said"], k["ids"]) for k in known] == [
        ("city", "2024-06-01", [ids["porto"]]), ("employer", "2024-02-01", [ids["employer"]])]
    assert known[0]["line"] == "maria city: Maria lives in Porto (said 2024-06-01)"
    assert known[0]["paths"] == ["facts/profiles/maria/city"]


def test_facts_are_dated_lines_and_derived_records_name_their_source_passage(api, ids):
    facts = search(api, {"query": Q, "entity": "maria"})["facts"]
    by_id = {fact["id"]: fact for fact in facts}
    assert ids["lisbon"] not in by_id  # superseded by Porto
    assert by_id[ids["porto"]]["line"] == "(2024-06-01) maria city: Maria lives in Porto"
    assert by_id[ids["porto"]]["path"] == "facts/profiles/maria/city"
    derived = by_id[ids["note"]]
    assert derived["said"] == "2024-03-02" and derived["line"] == "(2024-03-02) Maria relocated to Lisbon"
    assert derived["derived_from"] == [{"id": ids["moved"], "path": f"passages/turns/maria/{ids['moved']}"}]
    assert ids["note"] not in hit_ids(search(api, {"query": Q, "entity": "maria"}))


def test_assistant_passages_bring_the_note_that_they_are_suggestions(api, ids):
    body = search(api, {"query": "Alfama walking tour", "entity": "maria"})
    assert ids["suggested"] in hit_ids(body)
    assert body["notes"] == ["Passages whose role is the assistant are its own suggestions, not the person's words."]
    assert {tuple(hit["roles"]) for hit in body["hits"]} == {("Maria",), ("assistant",)}


def test_before_answers_as_of_that_day(api, ids):
    body = search(api, {"query": Q, "entity": "maria", "before": "2024-04-01"})
    assert set(hit_ids(body)) == {ids["moved"], ids["suggested"]}
    assert [k["ids"] for k in body["known"]] == [[ids["lisbon"]], [ids["employer"]]]
    assert ids["porto"] not in [fact["id"] for fact in body["facts"]]
    assert ids["lisbon"] in [fact["id"] for fact in body["facts"]]


def test_before_a_time_counts_that_instant_and_nothing_later(api, ids):
    body = search(api, {"query": Q, "entity": "maria", "before": "2024-03-01T10:00:00Z"})
    assert hit_ids(body) == [ids["moved"]]


def test_relative_words_narrow_the_window_against_before_and_say_so(api, ids):
    body = search(api, {"query": "Who visited me in May?", "entity": "maria", "before": "2024-06-10"})
    assert hit_ids(body) == [ids["sister"]]
    assert body["notes"][0].startswith("The question's \"in May\" was read as 2024-05-01 to 2024-05-31")
    # What is known now is as of before, not as of the end of the question's window.
    assert body["known"][0]["ids"] == [ids["porto"]]


def test_a_window_with_nothing_in_it_falls_back_with_a_note(api, ids):
    body = search(api, {"query": "What happened yesterday?", "entity": "maria", "before": "2024-04-20"})
    assert set(hit_ids(body)) == {ids["moved"], ids["suggested"]}
    assert body["notes"][0].startswith("Nothing was said in 2024-04-19")


def test_a_scope_gives_the_ranked_list_only(api, ids):
    body = search(api, {"query": Q, "scope": "passages/turns/maria"})
    assert list(body) == ["query", "found", "hits"]  # no fact lives in the turns collection
    assert set(hit_ids(body)) == {ids["moved"], ids["suggested"], ids["sister"]}


def test_after_gives_the_ranked_list_from_that_day_on(api, ids):
    body = search(api, {"query": Q, "after": "2024-05-20"})
    assert "known" not in body and "notes" not in body and "held" not in body
    assert set(hit_ids(body)) == {ids["sister"], ids["bob"]}
    assert [fact["id"] for fact in body["facts"]] == [ids["porto"]]


def test_a_facts_scope_ranks_facts_and_no_passages(api, ids):
    body = search(api, {"query": Q, "scope": "facts/profiles/maria"})
    assert body["found"] == 0 and body["hits"] == []
    assert {fact["id"] for fact in body["facts"]} == {ids["porto"], ids["employer"]}


def test_before_anything_is_keyed_a_brief_holds_query_found_and_hits(api, workspace):
    load(workspace)
    write(workspace, [turn("Maria likes green tea", "Maria", "2024-01-01T00:00:00Z")])
    body = search(api, {"query": "What does Maria drink?", "entity": "maria"})
    assert list(body) == ["query", "found", "hits"] and body["found"] == 1


def test_a_workspace_without_collections_answers_an_empty_brief(api, workspace):
    assert search(api, {"query": Q}) == {"query": Q, "found": 0, "hits": []}


def test_worked_out_counts_and_measures_time(api, ids):
    body = search(api, {"query": "How long ago did Maria move to Lisbon?", "entity": "maria", "before": "2024-07-01"})
    [line] = body["worked_out"]
    assert line["kind"] == "interval" and line["ids"][0] == body["facts"][0]["id"]
    count = search(api, {"query": "How many facts about Maria?", "entity": "maria"})["worked_out"][0]
    assert count["kind"] == "count" and count["value"] == 3


def test_two_current_statements_that_conflict_are_worked_out(api, ids, workspace):
    [globex] = write(workspace, [{"entity": "maria", "collection": "directory", "type": "fact", "key": "employer",
                                  "text": "Maria works at Globex", "occurred_at": "2024-02-02T10:00:00Z"}])
    body = search(api, {"query": "Where does Maria work?", "entity": "maria"})
    [conflict] = [line for line in body["worked_out"] if line["kind"] == "conflict"]
    assert conflict["ids"] == [globex, ids["employer"]]
    assert conflict["line"] == ("maria employer: current statements conflict: 'Maria works at Globex' (said "
                                "2024-02-02); 'Maria works at Acme' (said 2024-02-01)")
    [employer] = [k for k in body["known"] if k["attribute"] == "employer"]
    assert employer["paths"] == ["facts/directory/maria/employer", "facts/profiles/maria/employer"]
    assert "conflict" not in [line["kind"] for line in search(api, {"query": Q, "entity": "maria",
                                                                    "before": "2024-02-01"}).get("worked_out", [])]


def test_another_workspace_sees_none_of_these_records(api, other_workspace_api, ids):
    body = search(other_workspace_api, {"query": Q, "entity": "maria"})
    assert body["hits"] == [] and "known" not in body and "facts" not in body


def test_another_workspaces_search_changes_nothing_here(api, other_workspace_api, ids):
    before = search(api, {"query": Q, "entity": "maria"})
    search(other_workspace_api, {"query": Q, "entity": "maria"})
    assert search(api, {"query": Q, "entity": "maria"}) == before


ERRORS = [
    ({}, 422, "request_schema", "query"),
    ({"query": ""}, 422, "request_schema", "query"),
    ({"query": 5}, 422, "request_schema", "query"),
    ({"query": Q, "k": 5}, 422, "request_schema", "k"),
    ({"query": Q, "entity": ["maria"]}, 422, "request_schema", "entity"),
    ({"query": Q, "entity": "x" * 256}, 422, "request_schema", "entity"),
    ({"query": Q, "before": "2024-13-01"}, 422, "request_schema", "before"),
    ({"query": Q, "before": "yesterday"}, 422, "request_schema", "before"),
    ({"query": Q, "after": "2024-05-01T10:00:00"}, 422, "request_schema", "after"),
    ({"query": Q, "after": 20240501}, 422, "request_schema", "after"),
    ({"query": Q, "after": "2024-05-02", "before": "2024-05-01"}, 422, "date_order", "after"),
    ({"query": Q, "scope": "memories/turns"}, 422, "invalid_path", "scope"),
    ({"query": Q, "scope": "passages//maria"}, 422, "invalid_path", "scope"),
    ({"query": Q, "scope": "passages/turns/maria\x00"}, 422, "invalid_characters", None),
    ({"query": Q, "scope": f"passages/turns/maria/{'0' * 8}-0000-0000-0000-{'0' * 12}"}, 422, "invalid_path",
     "scope"),
    ({"query": Q, "entity": "bob", "scope": "passages/turns/maria"}, 422, "request_schema", "entity"),
    ({"query": "x" * 8193}, 422, "query_too_long", "query"),
    ([Q], 422, "request_schema", None),
]


@pytest.mark.parametrize("body, status, code, path", ERRORS)
def test_bad_bodies_are_refused_with_their_code_and_path(api, ids, body, status, code, path):
    records = Record.objects.count()
    answer = search(api, body, status)
    assert answer["error"] == code if code != "invalid_characters" else answer["error"] in ("invalid_character",
                                                                                             "invalid_path")
    if path is not None:
        assert answer["path"] == path
    assert Record.objects.count() == records and MemoryModelCalls.objects.count() == 0


@pytest.mark.parametrize("raw, code", [
    ('{"query": "a", "query": "b"}', "duplicate_key"),
    ('{"query": "a", "entity": "\\u0000"}', "invalid_character"),
    ("[" * 200 + "]" * 200, "json_too_deep"),
    ('{"query": ', "invalid_json"),
])
def test_hostile_json_is_refused_by_the_strict_parser(api, ids, raw, code):
    response = api.generic("POST", "/memory/search", raw, content_type="application/json")
    assert response.status_code == 422 and response.json()["error"] == code


def test_a_huge_body_is_413(api, ids, settings):
    settings.MEMSEEK = {"MAX_BODY_BYTES": 1000}
    response = api.post("/memory/search", {"query": "x" * 2000}, format="json")
    assert response.status_code == 413 and response.json()["error"] == "body_too_large"


def test_without_a_key_it_is_401(client, ids):
    assert client.post("/memory/search", {"query": Q}, content_type="application/json").status_code == 401
