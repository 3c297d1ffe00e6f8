"""Parsing ``POST /retrieve`` bodies: one strict parse into a frozen ``RetrieveRequest``, every
error naming its code and camelCase path (table-driven), the deterministic/rerank contradiction
as 400, and the defaults."""
from datetime import datetime, timezone

import pytest

from memseek_site.errors import ApiError
from retrieval_app.request import RetrieveRequest, TagFilter, parse_retrieve_request

INVALID = [
    ({}, "request_schema", "query"),
    ({"query": ""}, "request_schema", "query"),
    ({"query": "   "}, "request_schema", "query"),
    ({"query": 5}, "request_schema", "query"),
    ({"query": "x" * 8193}, "query_too_long", "query"),
    ({"query": "q", "unknown": 1}, "request_schema", "unknown"),
    ({"query": "q", "top_n": 5}, "request_schema", "top_n"),
    ({"query": "q", "entity": "a", "entities": ["b"]}, "request_schema", "entity"),
    ({"query": "q", "entity": ""}, "request_schema", "entity"),
    ({"query": "q", "entities": []}, "request_schema", "entities"),
    ({"query": "q", "entities": ["a", "a"]}, "request_schema", "entities"),
    ({"query": "q", "entities": ["a", 3]}, "request_schema", "entities[1]"),
    ({"query": "q", "collections": ["Bad Name"]}, "request_schema", "collections[0]"),
    ({"query": "q", "collections": "facts"}, "request_schema", "collections"),
    ({"query": "q", "types": ["ok", "_x"]}, "request_schema", "types[1]"),
    ({"query": "q", "tags": []}, "request_schema", "tags"),
    ({"query": "q", "tags": {"topic": None}}, "request_schema", "tags.topic"),
    ({"query": "q", "tags": {"topic": {"eq": "x"}}}, "request_schema", "tags.topic"),
    ({"query": "q", "tags": {"topic": []}}, "request_schema", "tags.topic"),
    ({"query": "q", "tags": {"topic": ["a", None]}}, "request_schema", "tags.topic[1]"),
    ({"query": "q", "tags": {"Topic": "a"}}, "request_schema", "tags.Topic"),
    ({"query": "q", "agentId": ""}, "request_schema", "agentId"),
    ({"query": "q", "topN": 0}, "request_schema", "topN"),
    ({"query": "q", "topN": 101}, "request_schema", "topN"),
    ({"query": "q", "topN": "5"}, "request_schema", "topN"),
    ({"query": "q", "tokenBudget": 255}, "request_schema", "tokenBudget"),
    ({"query": "q", "tokenBudget": 32001}, "request_schema", "tokenBudget"),
    ({"query": "q", "tokenBudget": 1000.5}, "request_schema", "tokenBudget"),
    ({"query": "q", "mode": "fast"}, "request_schema", "mode"),
    ({"query": "q", "rerank": "yes"}, "request_schema", "rerank"),
    ({"query": "q", "raw": 1}, "request_schema", "raw"),
    ({"query": "q", "includeSuperseded": "true"}, "request_schema", "includeSuperseded"),
    ({"query": "q", "excludeSuperseded": "no"}, "request_schema", "excludeSuperseded"),
    ({"query": "q", "asOf": "2026-01-01T00:00:00"}, "request_schema", "asOf"),
    ({"query": "q", "asOf": "yesterday"}, "request_schema", "asOf"),
    ({"query": "q", "asOfAxis": "system"}, "request_schema", "asOfAxis"),
    ({"query": "q", "explain": None}, "request_schema", "explain"),
    ({"query": "q", "mode": "deterministic", "rerank": True}, "mode_conflict", "rerank"),
]


@pytest.mark.parametrize(("body", "code", "path"), INVALID)
def test_invalid_body_names_code_and_camel_case_path(body, code, path):
    with pytest.raises(ApiError) as caught:
        parse_retrieve_request(body)
    assert (caught.value.code, caught.value.path) == (code, path)


def test_deterministic_with_rerank_is_a_400():
    with pytest.raises(ApiError) as caught:
        parse_retrieve_request({"query": "q", "mode": "deterministic", "rerank": True})
    assert caught.value.status == 400


def test_defaults():
    parsed = parse_retrieve_request({"query": "budget"})
    assert parsed == RetrieveRequest(
        query="budget", entities=None, collections=None, types=None, tags=(), agent_id=None, top_n=20,
        token_budget=None, mode="assisted", rerank=False, raw=False, include_superseded=False, as_of=None,
        as_of_axis="valid", explain=False)


def test_every_option_parses_into_frozen_values():
    parsed = parse_retrieve_request({
        "query": "q", "entity": "maria", "collections": ["facts", "events"], "types": ["fact"],
        "tags": {"topic": "budget", "labels": ["a", "b"]}, "agentId": "agent-7", "topN": 5, "tokenBudget": 256,
        "mode": "deterministic", "rerank": False, "raw": True, "includeSuperseded": True, "excludeSuperseded": True,
        "asOf": "2026-01-01T10:00:00Z", "asOfAxis": "transaction", "explain": True})
    assert parsed.entities == ("maria",)
    assert parsed.collections == ("facts", "events")
    assert parsed.tags == (TagFilter("topic", ("budget",), False), TagFilter("labels", ("a", "b"), True))
    assert parsed.as_of == datetime(2026, 1, 1, 10, tzinfo=timezone.utc)
    assert (parsed.agent_id, parsed.top_n, parsed.token_budget, parsed.mode, parsed.raw) == \
        ("agent-7", 5, 256, "deterministic", True)
    assert (parsed.include_superseded, parsed.as_of_axis, parsed.explain) == (True, "transaction", True)
    with pytest.raises(AttributeError):
        parsed.query = "other"


def test_budget_bounds_are_inclusive():
    assert parse_retrieve_request({"query": "q", "tokenBudget": 256}).token_budget == 256
    assert parse_retrieve_request({"query": "q", "tokenBudget": 32000}).token_budget == 32000


@pytest.mark.parametrize("value", [True, False])
def test_exclude_superseded_is_accepted_and_ignored(value):
    assert parse_retrieve_request({"query": "q", "excludeSuperseded": value}) == parse_retrieve_request({"query": "q"})


def test_request_hash_input_is_canonical():
    one = parse_retrieve_request({"query": "q", "tags": {"b": 1, "a": [2]}, "asOf": "2026-01-01T11:00:00+01:00"})
    two = parse_retrieve_request({"asOf": "2026-01-01T10:00:00Z", "tags": {"a": [2], "b": 1}, "query": "q"})
    assert one.canonical(4000) == two.canonical(4000)
    assert one.canonical(4000) != one.canonical(3000)


def test_an_integral_float_budget_is_an_integer_as_json_schema_counts_it():
    # The OpenAPI document (JSON Schema) admits 1000.0 for an integer; so does the reader.
    assert parse_retrieve_request({"query": "q", "tokenBudget": 1000.0, "topN": 5.0}).token_budget == 1000
