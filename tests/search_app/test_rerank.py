"""``rerank: {backend: llm_judge}`` against a real loopback chat-completions server
(tests/openai_server.py; views-and-search "Model reranking"; reference 7.2 items 9-11,
A.1 step 9).

Articles (fixtures/catalogs/graph) are ready at insert and found by text mode, so no embedding
model is loaded. Searches rank with ``[score, priority]``, so the order before reranking is
known exactly: A (4), B (3), C (2), D (1).
"""
import json
import re
import shutil
import threading
from datetime import datetime, timedelta, timezone

import pytest

from search_app.engine import rerank as rerank_module
from search_app.engine.tokens import count_tokens
from tests.openai_server import Hang, Raw, ScriptedOpenAIServer, Status, llm_catalog_dir
from tests.search_app.graph_factories import article, catalog_copy, load_graph_catalog, search, write

T0 = datetime(2026, 7, 1, 10, 0, tzinfo=timezone.utc)
Q = "invoice & refund <urgent>"
TEXTS = {"A": "Invoice <b>overdue</b> & refund pending", "B": "invoice refund B", "C": "invoice refund C",
         "D": "invoice refund D"}
BODY = {"q": Q, "mode": "text", "scope": {"collections": ["articles"]}, "rank": ["score", "priority"], "k": 10,
        "rerank": {"backend": "llm_judge", "top_n": 3}}
SCORED = {"scored": True, "score_semantics": "query_relative", "score_range": [0.0, 1.0], "normalization": "min_max",
          "normalization_scope": "ranked_candidates", "calibrated": False, "higher_is_better": True,
          "native_score_field": "rank_score"}


@pytest.fixture
def server():
    with ScriptedOpenAIServer() as scripted:
        yield scripted


@pytest.fixture
def ids(workspace, server, tmp_path):
    """The graph catalog plus the scripted ``cheap`` alias of tests/openai_server.py; four
    articles. Returns {letter: id}."""
    directory = catalog_copy(tmp_path)
    shutil.copy(llm_catalog_dir(tmp_path, server.base_url) / "conf" / "models.yaml", directory / "conf")
    load_graph_catalog(workspace, directory)
    items = [article(text, priority=4 - index, topic="billing" if letter in "AC" else "support",
                     occurred_at=(T0 + timedelta(hours=index)).isoformat())
             for index, (letter, text) in enumerate(TEXTS.items())]
    return dict(zip(TEXTS, write(workspace, items)))


def judged(ids, **scores):
    return {"scores": [{"id": ids[letter], "score": score} for letter, score in scores.items()]}


def order(ids, body):
    by_id = {record_id: letter for letter, record_id in ids.items()}
    return "".join(by_id[hit["id"]] for hit in body["hits"])


def test_the_judge_reorders_the_top_n_and_the_tail_stays_behind(api, ids, server):
    server.chat.append(judged(ids, A=0.2, B=0.9, C=0.2))
    body = search(api, BODY)
    assert order(ids, body) == "BACD"  # A and C tie at 0.2 and keep their previous order
    assert [hit["rank_score"] for hit in body["hits"]] == [0.9, 0.2, 0.2, -1.0]
    assert [hit["score"] for hit in body["hits"]] == pytest.approx([1.0, 1.2 / 1.9, 1.2 / 1.9, 0.0])
    assert body["ranking"] == {"kind": "llm_judge", **SCORED}
    assert body["rerank"] == {"backend": "llm_judge", "top_n": 3, "model": "cheap", "judged_records": 3}


def test_the_unjudged_tail_keeps_its_order_with_values_minus_one_minus_two(api, ids, server):
    server.chat.append(judged(ids, A=0.0))
    body = search(api, {**BODY, "rerank": {"backend": "llm_judge", "top_n": 1}})
    assert order(ids, body) == "ABCD"
    assert [hit["rank_score"] for hit in body["hits"]] == [0.0, -1.0, -2.0, -3.0]
    assert body["rerank"]["judged_records"] == 1


def test_reranking_happens_before_the_cut_to_k(api, ids, server):
    server.chat.append(judged(ids, A=0.1, B=0.2, C=1.0))
    body = search(api, {**BODY, "k": 2})
    assert order(ids, body) == "CB"
    assert body["hits"][1]["score"] == pytest.approx(1.2 / 2.0)  # D's -1 still sets the lower bound
    assert body["rerank"]["judged_records"] == 3


def test_one_completion_with_the_search_rerank_schema_and_a_fenced_escaped_prompt(api, ids, server):
    server.chat.append(judged(ids, A=0.5, B=0.5, C=0.5))
    search(api, BODY)
    [request] = server.chat_requests()
    body = request.body
    assert body["model"] == "scripted-small"
    assert body["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "search_rerank", "schema": json.loads(json.dumps(rerank_module.OUTPUT_SCHEMA))}}
    assert body["max_completion_tokens"] == 512 and body["temperature"] == 0
    system, user = body["messages"]
    assert system["role"] == "system" and 'untrusted="true"' in system["content"]
    rows = [f"[id={ids['A']}] 2026-07-01T10:00Z | articles/article | "
            r"Invoice \u003cb\u003eoverdue\u003c/b\u003e \u0026 refund pending",
            f"[id={ids['B']}] 2026-07-01T11:00Z | articles/article | invoice refund B",
            f"[id={ids['C']}] 2026-07-01T12:00Z | articles/article | invoice refund C"]
    assert user == {"role": "user", "content": (
        '<data untrusted="true">\n' r"invoice \u0026 refund \u003curgent\u003e" '\n</data>\n'
        '<records untrusted="true">\n' + "".join(row + "\n" for row in rows) + "</records>")}


def test_a_code_fenced_answer_is_accepted(api, ids, server):
    server.chat.append("```json\n" + json.dumps(judged(ids, A=0.1, B=0.2, C=0.3)) + "\n```")
    assert order(ids, search(api, BODY)) == "CBAD"


def test_rerank_none_runs_no_model(api, ids, server):
    body = search(api, {**BODY, "rerank": {"backend": "none"}})
    assert order(ids, body) == "ABCD" and "rerank" not in body
    assert body["ranking"]["kind"] == "rank_expression"
    assert server.chat_requests() == []


def test_the_prompt_budget_limits_how_many_rows_are_judged(api, ids, server, settings):
    server.chat_default = reverse_judge
    search(api, BODY)
    content = server.chat_requests()[0].body["messages"][1]["content"]
    opening = '<records untrusted="true">\n'
    head, rest = content.split(opening)
    rows = rest.removesuffix("</records>").splitlines(keepends=True)
    fixed = count_tokens(rerank_module.SYSTEM) + count_tokens(head + opening + "</records>")
    settings.MEMSEEK = {"MAX_PROMPT_TOKENS": fixed + count_tokens(rows[0]) + count_tokens(rows[1])}
    body = search(api, BODY)
    assert body["rerank"]["judged_records"] == 2
    assert server.chat_requests()[1].body["messages"][1]["content"] == head + opening + rows[0] + rows[1] + "</records>"
    assert order(ids, body) == "BACD"
    settings.MEMSEEK = {"MAX_PROMPT_TOKENS": fixed + count_tokens(rows[0]) - 1}
    assert search(api, BODY, 503)["error"] == "rerank_budget"
    assert len(server.chat_requests()) == 2


# --- the judge must answer completely -----------------------------------------------------------

def _entries(ids, *pairs):
    return [{"id": ids[letter] if letter in ids else letter, "score": score} for letter, score in pairs]


MALFORMED = {
    "missing_id": lambda ids: {"scores": _entries(ids, ("A", 0.5), ("B", 0.5))},
    "extra_id": lambda ids: {"scores": _entries(ids, ("A", 0.5), ("B", 0.5), ("C", 0.5), ("D", 0.5))},
    "unknown_id": lambda ids: {"scores": _entries(ids, ("A", 0.5), ("B", 0.5), ("C", 0.5), ("nope", 0.5))},
    "duplicate_id": lambda ids: {"scores": _entries(ids, ("A", 0.5), ("B", 0.5), ("C", 0.5), ("A", 0.4))},
    "score_above_1": lambda ids: {"scores": _entries(ids, ("A", 1.5), ("B", 0.5), ("C", 0.5))},
    "score_below_0": lambda ids: {"scores": _entries(ids, ("A", -0.1), ("B", 0.5), ("C", 0.5))},
    "score_as_string": lambda ids: {"scores": _entries(ids, ("A", "0.5"), ("B", 0.5), ("C", 0.5))},
    "nan_as_string": lambda ids: {"scores": _entries(ids, ("A", "NaN"), ("B", 0.5), ("C", 0.5))},
    "nan_literal": lambda ids: json.dumps(judged(ids, A=0.5, B=0.5, C=0.5)).replace("0.5", "NaN", 1),
    "score_boolean": lambda ids: {"scores": _entries(ids, ("A", True), ("B", 0.5), ("C", 0.5))},
    "score_missing": lambda ids: {"scores": [{"id": ids["A"]}, *_entries(ids, ("B", 0.5), ("C", 0.5))]},
    "judgment_extra_key": lambda ids: {"scores": [{"id": ids["A"], "score": 0.5, "why": "x"},
                                                  *_entries(ids, ("B", 0.5), ("C", 0.5))]},
    "not_json": lambda ids: "B is clearly the best answer.",
    "json_array": lambda ids: json.dumps(judged(ids, A=0.5, B=0.5, C=0.5)["scores"]),
    "extra_top_level_key": lambda ids: {**judged(ids, A=0.5, B=0.5, C=0.5), "note": "done"},
    "scores_not_a_list": lambda ids: {"scores": {ids["A"]: 0.5}},
    "empty_object": lambda ids: {},
    "protocol_violation": lambda ids: Raw("this is not a chat completion"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_judgment_fails_the_search(api, ids, server, case):
    server.chat.append(MALFORMED[case](ids))
    body = search(api, BODY, 503)
    assert body["error"] == "rerank_invalid"
    assert len(server.chat_requests()) == 1  # no retry and no silent fallback


@pytest.mark.parametrize("status", [500, 429])
def test_a_failing_provider_is_unavailable(api, ids, server, status):
    server.chat.append(Status(status))
    assert search(api, BODY, 503)["error"] == "rerank_unavailable"


def test_a_provider_slower_than_the_timeout_times_out(api, ids, server, monkeypatch):
    monkeypatch.setattr(rerank_module, "TIMEOUT_S", 0.3)
    release = threading.Event()
    server.chat.append(Hang(release, then=judged(ids, A=0.5, B=0.5, C=0.5), max_wait_s=10))
    try:
        body = search(api, BODY, 503)
    finally:
        release.set()
    assert body["error"] == "rerank_timeout"
    assert server.hang_started.is_set()


# --- request checks ---------------------------------------------------------------------------------

def test_without_a_cheap_alias_rerank_is_rejected_before_searching(api, workspace, server, tmp_path):
    models = ("providers:\n  scripted:\n    adapter: openai_compat\n"
              f"    base_url: {server.base_url}\n"
              "aliases:\n  strong:\n    targets: ['scripted:scripted-large']\n"
              "embedding: {provider: scripted, model: e, dimensions: 8, space: scripted-8}\n")
    load_graph_catalog(workspace, catalog_copy(tmp_path, files={"conf/models.yaml": models}))
    write(workspace, [article("invoice refund", priority=1)])
    body = search(api, BODY, 422)
    assert (body["error"], body["path"]) == ("rerank_model", "rerank.backend")
    assert server.chat_requests() == []


@pytest.mark.parametrize("body, path", [
    ({"mode": "recent", "scope": {"collections": ["articles"]}, "rerank": {"backend": "llm_judge"}}, "rerank"),
    ({"mode": "structured", "scope": {"collections": ["articles"]}, "order_by": [{"field": "topic"}],
      "rerank": {"backend": "llm_judge"}}, "rerank"),
    ({"q": Q, "fuse": {"kind": "rrf"}, "rerank": {"backend": "llm_judge"}, "sources": [
        {"name": "text", "mode": "text", "scope": {"collections": ["articles"]}},
        {"name": "recent", "mode": "recent", "scope": {"collections": ["articles"]}}]}, "rerank"),
    ({**BODY, "rerank": {"backend": "llm_judge", "top_n": 21}}, "rerank.top_n"),
    ({**BODY, "rerank": {"backend": "llm_judge", "top_n": 0}}, "rerank.top_n"),
    ({**BODY, "rerank": {"backend": "cohere"}}, "rerank.backend"),
])
def test_rerank_needs_query_modes_and_a_bounded_top_n(api, ids, server, body, path):
    answer = search(api, body, 422)
    assert (answer["error"], answer["path"]) == ("request_schema", path)
    assert server.chat_requests() == []


# --- combined searches ---------------------------------------------------------------------------

def reverse_judge(request):
    """Score the rows it was sent so that their order is reversed."""
    sent = re.findall(r"\[id=([0-9a-f-]{36})\]", request["messages"][1]["content"])
    return {"scores": [{"id": record_id, "score": (index + 1) / len(sent)} for index, record_id in enumerate(sent)]}


def test_each_source_is_reranked_before_the_merge(api, ids, server):
    server.chat_default = reverse_judge
    body = search(api, {"q": Q, "k": 10, "fuse": {"kind": "rrf"}, "rerank": {"backend": "llm_judge", "top_n": 20},
                        "sources": [
                            {"name": "billing", "mode": "text", "scope": {"collections": ["articles"]},
                             "where": {"topic": {"eq": "billing"}}, "rank": ["score", "priority"]},
                            {"name": "all", "mode": "text", "scope": {"collections": ["articles"]},
                             "rank": ["score", "priority"]}]})
    requests = server.chat_requests()
    assert len(requests) == 2  # one judgment per source
    sent = [re.findall(r"\[id=([0-9a-f-]{36})\]", r.body["messages"][1]["content"]) for r in requests]
    assert sent == [[ids["A"], ids["C"]], [ids[letter] for letter in "ABCD"]]
    assert body["rerank"] == {"backend": "llm_judge", "top_n": 20, "model": "cheap", "judged_records": 6}
    assert body["ranking"] == {"kind": "rrf", **SCORED}
    ranks = {letter: hit["source_ranks"] for hit in body["hits"] for letter in ids if ids[letter] == hit["id"]}
    assert ranks == {"A": {"billing": 2, "all": 4}, "B": {"all": 3}, "C": {"billing": 1, "all": 2}, "D": {"all": 1}}
    assert order(ids, body) == "CADB"  # C: 1/61 + 1/62, A: 1/62 + 1/64, D: 1/61, B: 1/63
