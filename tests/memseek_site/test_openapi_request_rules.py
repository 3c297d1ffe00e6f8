"""What schemathesis found the document admitting and the server refusing, one regression each:
the document now states the rule, from the reader's own declaration, and the server's answer at
the edge is what the document says."""
import functools
import re

import jsonschema
import pytest
from drf_spectacular.generators import SchemaGenerator

from memseek_site.json_body import BIGINT_MAX, BIGINT_MIN
from memseek_site.parsing import PUBLIC_NAME, query_list, query_list_schema
from retrieval_app.memory.addresses import parse_path, path_schema


@functools.cache
def document() -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)


def schema_of(component: str) -> dict:
    return document()["components"]["schemas"][component]


def body_schema(method: str, route: str) -> dict:
    """The operation's request body schema, with the document's components to resolve it."""
    operation = document()["paths"][route][method]
    return {**operation["requestBody"]["content"]["application/json"]["schema"],
            "components": document()["components"]}


def valid(schema: dict, value) -> bool:
    resolver_root = {**schema, "components": document()["components"]}
    return jsonschema.Draft202012Validator(resolver_root).is_valid(value)


def test_the_document_is_openapi_3_1_so_the_searchspec_is_the_parsers_json_schema(db):
    assert document()["openapi"] == "3.1.0"
    assert schema_of("SearchSpecRequest")["else"]["required"] == ["mode"]  # was a loose JSONField-only object
    assert schema_of("SearchSpec.scope")["additionalProperties"] is False


@pytest.mark.parametrize("body", [{}, {"q": "a\x00b", "mode": "text"}, {"q": "a", "mode": "text", "k": 2**63}])
def test_search_bodies_the_server_refuses_are_invalid_by_the_document(db, body):
    # schemathesis sent {} (no mode), a q holding NUL, a k past bigint: all refused, all once valid.
    assert not valid(body_schema("post", "/search"), body)


def test_every_request_body_is_required(db):
    bodies = [operation["requestBody"] for item in document()["paths"].values() for operation in item.values()
              if isinstance(operation, dict) and "requestBody" in operation]
    assert bodies and all(body["required"] is True for body in bodies)


def test_open_values_are_storable_json(db):
    storable = {"$ref": "#/components/schemas/StorableJSON"}
    assert valid(storable, {"a": [1, "x", None, {"b": 2.5}]})
    for bad in ({"a": "x\x00"}, {"a\x00": 1}, [BIGINT_MAX + 1], {"a": [BIGINT_MIN - 1]}):
        assert not valid(storable, bad), bad


def test_retrieve_states_its_cross_member_rules(db):
    schema = body_schema("post", "/retrieve")
    assert valid(schema, {"query": "q", "entity": "e"})
    assert not valid(schema, {"query": "q", "entity": "e", "entities": ["e"]})
    assert not valid(schema, {"query": "q", "mode": "deterministic", "rerank": True})
    assert not valid(schema, {"query": " "})  # blank: request_schema


def test_retrieve_refuses_exactly_what_the_document_refuses(api, catalog):
    both = api.post("/retrieve", {"query": "q", "entity": "e", "entities": ["e"]}, format="json")
    assert (both.status_code, both.json()["path"]) == (422, "entity")
    conflict = api.post("/retrieve", {"query": "q", "mode": "deterministic", "rerank": True}, format="json")
    assert (conflict.status_code, conflict.json()["error"]) == (400, "mode_conflict")


def test_evaluate_needs_a_relevant_grade_of_one_or_more(db):
    item = body_schema("post", "/evaluate")
    record = "7d444840-9dc0-11d1-b245-5ffdce74fad2"
    assert valid(item, {"queries": [{"query": "q", "relevant": {record: 1}}]})
    assert not valid(item, {"queries": [{"query": "q", "relevant": {record: 0}}]})
    assert not valid(item, {"queries": [{"query": "q", "relevant": {}}]})
    assert not valid(item, {"queries": []})


def test_mcp_body_is_one_json_rpc_message(db):
    schema = body_schema("post", "/mcp")
    assert valid(schema, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert valid(schema, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert not valid(schema, {"jsonrpc": "2.0", "params": {}})  # neither request nor response
    assert not valid(schema, {"jsonrpc": "2.0", "id": 1, "method": "x", "result": {}})


@pytest.mark.parametrize("text", ["a", "a,b", " a , b ,", "a,,b", "A", "a b", ",", " ", "a\n", "x" * 65,
                                  ",".join("n" + str(i) for i in range(101))])
def test_a_comma_separated_name_list_pattern_matches_what_query_list_accepts(text):
    try:
        query_list(text, "collections", pattern=PUBLIC_NAME)
        accepted = True
    except Exception:
        accepted = False
    assert bool(re.search(query_list_schema(PUBLIC_NAME)["pattern"], text)) is accepted


@pytest.mark.parametrize(("text", "complete", "kinds"), [
    ("passages/main/contact.maria/7d444840-9dc0-11d1-b245-5ffdce74fad2", True, ("passages", "facts")),
    ("facts/main/contact%2Fmaria/role", True, ("facts",)),
    ("passages/main", False, ("passages", "facts")),
    ("", False, ("passages", "facts")),
    ("passages/main/", False, ("passages", "facts")),
])
def test_memory_paths_valid_by_the_document_parse(text, complete, kinds):
    assert re.search(path_schema(complete=complete, kinds=kinds)["pattern"], text)
    parse_path(text, field="path", complete=complete, kinds=kinds)


@pytest.mark.parametrize(("text", "complete"), [("passages/main", True), ("nowhere/main", False),
                                                ("passages/Main", False), ("passages/main/e/not-a-uuid", True),
                                                ("passages//main", False), ("facts/main/e%00/k", True)])
def test_memory_paths_the_parser_refuses_are_invalid_by_the_document(text, complete):
    assert not re.search(path_schema(complete=complete)["pattern"], text)
    with pytest.raises(Exception):
        parse_path(text, field="path", complete=complete)


def test_query_parameters_state_the_readers_limits(db):
    timeline = {p["name"]: p for p in document()["paths"]["/timeline"]["get"]["parameters"]}
    assert timeline["entity"]["schema"]["maxLength"] == 255 and timeline["entity"]["required"] is True
    assert (timeline["limit"]["schema"]["minimum"], timeline["limit"]["schema"]["maximum"]) == (1, 100)
    context = document()["paths"]["/context"]["get"]
    assert context["x-query-rules"] == {"dependentRequired": {"fence_preamble": ["fence_tag"]}}
    ls = {p["name"]: p for p in document()["paths"]["/memory/ls"]["get"]["parameters"]}
    assert ls["cursor"]["x-issued-by-server"] is True


def test_a_utc_offset_past_what_postgresql_stores_is_read_in_utc_not_a_500(api, catalog):
    # schemathesis: occurred_before "...-16:06" (valid ISO 8601, PostgreSQL keeps offsets to 15:59)
    # made the lexical scan's SQL fail with 500 internal_error.
    body = {"contract_version": 1, "mode": "lexical", "query": {"text": "budget"},
            "scope": {"occurred_before": "0454-08-29T15:56:44-16:06"}}
    response = api.post("/search/lexical", body, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["scope"]["occurred_before"] == "0454-08-30T08:02:44+00:00"


def test_evaluate_target_and_per_query_keys_follow_the_target(db):
    schema = body_schema("post", "/evaluate")
    relevant = {"7d444840-9dc0-11d1-b245-5ffdce74fad2": 1}
    assert not valid(schema, {"queries": [{"query": "q", "relevant": relevant}], "target": None})
    assert not valid(schema, {"queries": [{"query": "q", "relevant": relevant, "parameters": {}}]})
    assert not valid(schema, {"queries": [{"query": "q", "relevant": relevant, "topN": 5}]})
    view = {"view": "customer_context"}
    assert valid(schema, {"queries": [{"query": "q", "relevant": relevant, "parameters": {}}], "target": view})
    assert not valid(schema, {"queries": [{"query": "q", "relevant": relevant, "mode": "assisted"}], "target": view})


def test_an_integral_float_json_rpc_id_is_an_integer(api, catalog):
    # schemathesis: id -1019721.0 (an integer by JSON Schema) was refused by the MCP SDK with 400.
    response = api.post("/mcp", {"jsonrpc": "2.0", "id": 7.0, "method": "tools/list"}, format="json",
                        HTTP_ACCEPT="application/json, text/event-stream")
    assert response.status_code == 200, response.content
    assert response.json()["id"] == 7
