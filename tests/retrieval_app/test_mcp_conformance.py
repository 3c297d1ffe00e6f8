"""``/mcp`` to the letter of the MCP specification (issue 37): the transport's method rule, the
bearer challenge, JSON-RPC errors for an unknown tool and a batch, the newer revision's unknown
method, and the ``remember`` tool's input schema and error paths. In-process (Django's test client)."""
from __future__ import annotations

import json
import shutil

import jsonschema
import pytest
import referencing
import referencing.jsonschema
import yaml
from rest_framework.test import APIClient

from catalog_app.models import Record
from catalog_app.services.catalog_load import catalog_load
from tests.catalog_app.factories import record_make
from tests.memseek_site.test_openapi_responses import check

from .test_mcp_endpoint import FIXTURES, MODERN, call, failure, rpc, tools

STREAM = "text/event-stream"


@pytest.mark.parametrize("accept", [STREAM, "application/json, text/event-stream", "*/*"])
@pytest.mark.parametrize("method", ["GET", "PUT", "PATCH", "DELETE"])
def test_methods_other_than_post_are_405_whatever_the_client_accepts(catalog, api, method, accept):
    # Streamable HTTP: a server that offers no GET stream answers GET with 405; TypeScript clients
    # tear the session down on anything else.
    response = api.generic(method, "/mcp", b"", HTTP_ACCEPT=accept, HTTP_MCP_PROTOCOL_VERSION=MODERN)
    assert response.status_code == 405, response.content
    assert response.json()["error"] == "method_not_allowed"
    assert "POST" in response["Allow"] and "GET" not in response["Allow"]


@pytest.mark.parametrize("route", ["/mcp", "/tools", "/timeline?entity=x"])
def test_a_401_carries_a_bearer_challenge(catalog, route):
    anonymous = APIClient()
    response = anonymous.post(route, {}, format="json") if route == "/mcp" else anonymous.get(route)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer ")
    wrong = APIClient()
    wrong.credentials(HTTP_AUTHORIZATION="Bearer not-a-key")
    response = rpc(wrong, "tools/list") if route == "/mcp" else wrong.get(route)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer ") and 'error="invalid_token"' in response[
        "WWW-Authenticate"]


def test_an_unknown_tool_is_the_json_rpc_invalid_params_error(catalog, api):
    response = rpc(api, "tools/call", {"name": "no_such_tool", "arguments": {}})
    answer = response.json()
    assert "result" not in answer, answer
    assert answer["error"]["code"] == -32602 and "no_such_tool" in answer["error"]["message"]
    check(response, "POST", "/mcp", response.status_code)


@pytest.mark.parametrize("size", [10, 200_000])
def test_a_batch_is_refused_without_echoing_its_body(catalog, api, size):
    batch = [{"jsonrpc": "2.0", "id": n, "method": "tools/list", "params": {"pad": "x" * 100}}
             for n in range(size // 100)]
    raw = json.dumps(batch).encode()
    response = api.generic("POST", "/mcp", raw, content_type="application/json",
                           HTTP_ACCEPT="application/json, text/event-stream", HTTP_MCP_PROTOCOL_VERSION=MODERN)
    assert response.status_code == 400
    answer = response.json()
    assert (answer["id"], answer["error"]["code"]) == (None, -32600)
    assert "batch" in answer["error"]["message"].lower()
    assert len(response.content) < 1024 and "pad" not in response.content.decode()


def test_a_long_refused_member_is_not_echoed_whole(catalog, api):
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}, "x" * 50_000: 1}
    response = api.generic("POST", "/mcp", json.dumps(message).encode(), content_type="application/json",
                           HTTP_ACCEPT="application/json, text/event-stream")
    assert response.status_code == 400 and len(response.content) < 1024


def test_an_unknown_method_in_the_newer_revision_is_a_documented_404(catalog, api):
    response = rpc(api, "no/such/method")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == -32601
    check(response, "POST", "/mcp", 404)


REMEMBER_CASES = [
    {"entity": "contact.maria", "type": "note", "text": "Calls on Tuesdays."},
    {"entity": "contact.maria", "type": "note", "text": "Calls.", "content": {"speaker": "maria"}},
    {"entity": "contact.maria", "type": "note", "text": "Calls.", "content": {"text": "Calls."}},
    {"entity": "contact.maria", "type": "note", "content": {"text": "Calls on Tuesdays."}},
    {"entity": "contact.maria", "type": "note"},
    {"entity": "contact.maria", "text": "Calls."},
    {"type": "note", "text": "Calls."},
    {"entity": "contact.maria", "type": "note", "text": "Calls.", "content": {"speaker": 3}},
]


@pytest.mark.parametrize("arguments", REMEMBER_CASES)
def test_remember_input_schema_accepts_exactly_what_the_tool_accepts(catalog, api, arguments):
    # The published schema is the oracle an agent plans with: its verdict must be the route's.
    schema = tools(api)["remember"]["input_schema"]
    admitted = jsonschema.Draft202012Validator(schema).is_valid(arguments)
    before = Record.objects.count()
    result = call(api, "remember", arguments)
    assert (not result["isError"]) is admitted, (arguments, result["content"][0]["text"])
    assert Record.objects.count() == before + (1 if admitted else 0)


def test_remember_schema_requires_text_without_a_projection(catalog, api):
    schema = tools(api)["remember"]["input_schema"]
    assert sorted(schema["required"]) == ["entity", "text", "type"]
    assert "text" not in schema["properties"]["content"].get("required", [])


@pytest.mark.parametrize(("arguments", "path"), [
    ({"entity": "contact.maria", "type": "note", "text": "x", "content": {"speaker": 3}}, "content"),
    ({"entity": "contact.maria", "type": "note", "content": {"text": "x"}}, "text"),
    ({"entity": "", "type": "note", "text": "x"}, "entity"),
    ({"entity": "contact.maria", "type": "Not A Type!", "text": "x"}, "type"),
])
def test_remember_errors_name_the_tools_arguments(catalog, api, arguments, path):
    before = Record.objects.count()
    result = call(api, "remember", arguments)
    envelope = failure(result)
    error_path = envelope["path"]
    assert error_path == path or error_path.startswith(path + "."), envelope
    assert "records" not in error_path and "records[0]" not in envelope["detail"]
    assert Record.objects.count() == before


def _document_validator(document: dict, schema: dict) -> jsonschema.Draft202012Validator:
    """The oracle: ``schema`` validated with its ``$ref``s resolved inside ``document`` by
    jsonschema itself, not by the inlining under test."""
    resource = referencing.Resource.from_contents(document, default_specification=referencing.jsonschema.DRAFT202012)
    registry = referencing.Registry().with_resource("urn:openapi", resource)
    return jsonschema.Draft202012Validator(_absolute(schema), registry=registry)


def _absolute(node):
    """``node`` with its document-relative ``$ref``s pointing into ``urn:openapi``."""
    if isinstance(node, dict):
        return {key: "urn:openapi" + value if key == "$ref" and value.startswith("#") else _absolute(value)
                for key, value in node.items()}
    return [_absolute(item) for item in node] if isinstance(node, list) else node


EXAMPLE_CALLS = {
    "remember": {"entity": "contact.maria", "type": "note", "text": "Maria prefers calls on Tuesdays."},
    "customer_context": {"entity": "contact.maria", "task": "Q3 budget"},
    "search_memory": {"query": "Q3 budget", "entity": "contact.maria"},
    "brief": {"query": "What is Maria's Q3 budget?", "entity": "contact.maria"},
    "grep": {"q": "budget", "entity": "contact.maria"},
    "latest": {"entity": "contact.maria"},
    "ls": {"path": "passages/main/contact.maria"},
    "read": {"path": "facts/main/contact.maria/city"},
    "history": {"path": "facts/main/contact.maria/city"},
    "forget": {"entity": "contact.nobody", "dry_run": True},
}
# Tools whose arguments name what the test writes first.
WRITTEN_CALLS = ("open_record", "around", "rate_context")


def test_every_example_tool_publishes_its_routes_response_schema_and_its_results_validate(catalog, api, settings):
    from catalog_app.signals import load_bundled_model
    from retrieval_app.mcp.route_schema import _openapi

    # It checks bodies, not time: the cold first queries on a shared machine must not be 503s.
    settings.MEMSEEK = {**getattr(settings, "MEMSEEK", {}), "REQUEST_DEADLINE_MS": 120_000,
                        "REQUEST_DEADLINE_SEARCH_MS": 120_000, "REQUEST_DEADLINE_BULK_MS": 120_000}

    document = _openapi()
    load_bundled_model()  # as a server does at start: a cold load inside one call could outlast its deadline
    passage = record_make(catalog, entity="contact.maria", text="Maria's Q3 budget is 40k.")  # enriched: a passage
    listed = {tool["name"]: tool for tool in rpc(api, "tools/list").json()["result"]["tools"]}
    published = tools(api)
    assert set(listed) == {*EXAMPLE_CALLS, *WRITTEN_CALLS}
    calls = dict(EXAMPLE_CALLS)
    calls["open_record"] = {"id": call(api, "remember", {"entity": "contact.maria", "type": "note",
                                                         "text": "Opened."})["structuredContent"]["inserted"][0]["id"]}
    calls["around"] = {"path": f"passages/main/contact.maria/{passage.pk}"}
    calls["rate_context"] = {"outcome": "success"}  # with the receiptId search_memory answers in the loop
    receipt_id = None
    for name, arguments in calls.items():
        schema = listed[name]["outputSchema"]
        assert schema == published[name]["output_schema"] and schema["type"] == "object"
        assert "$ref" not in json.dumps(schema), name  # self-contained
        route = published[name]["route"]
        template = "/views/{name}/query" if published[name]["kind"] == "view" else route["path"]
        operation = document["paths"][template][route["method"].lower()]
        documented = operation["responses"]["200"]["content"]["application/json"]["schema"]
        if name == "read":  # written only now: the view calls above stay as small as they were
            record_make(catalog, entity="contact.maria", type="fact", key="city", text="Maria lives in Porto.")
        if name == "rate_context":
            arguments = {**arguments, "receiptId": receipt_id}
        result = call(api, name, arguments)
        assert result["isError"] is False, (name, result["content"][0]["text"])
        if name == "search_memory":
            receipt_id = result["structuredContent"]["receiptId"]
        jsonschema.Draft202012Validator(schema).validate(result["structuredContent"])
        assert _document_validator(document, documented).is_valid(result["structuredContent"]), name
        # The inlined schema and the document's say the same of a body with a member mistyped.
        broken = {**result["structuredContent"], next(iter(schema["required"])): {"not": "this"}}
        assert jsonschema.Draft202012Validator(schema).is_valid(broken) is _document_validator(
            document, documented).is_valid(broken), name


def test_get_tools_answers_304_while_its_etag_is_current(catalog, api, tmp_path):
    first = api.get("/tools")
    etag = first["ETag"]
    assert first.status_code == 200 and etag.startswith('"') and etag.endswith('"')
    for header in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        unchanged = api.get("/tools", HTTP_IF_NONE_MATCH=header)
        assert unchanged.status_code == 304 and unchanged.content == b"" and unchanged["ETag"] == etag
    for header in ('"stale"', "", "garbage"):
        assert api.get("/tools", HTTP_IF_NONE_MATCH=header).status_code == 200
    # Another active declaration: another tag, and the old one gets the full list.
    directory = tmp_path / "catalog"
    shutil.copytree(FIXTURES / "example", directory)
    declaration = yaml.safe_load((directory / "mcp" / "agent.yaml").read_text())
    declaration.update(version=2, tools=declaration["tools"][:2])
    (directory / "mcp" / "agent.yaml").write_text(yaml.safe_dump(declaration))
    catalog_load(workspace=catalog, directory=directory)
    changed = api.get("/tools", HTTP_IF_NONE_MATCH=etag)
    assert changed.status_code == 200 and changed["ETag"] != etag and len(changed.json()["tools"]) == 2
    assert APIClient().get("/tools", HTTP_IF_NONE_MATCH="*").status_code == 401  # no key, no tag


@pytest.mark.parametrize(("headers", "method"), [
    ({"HTTP_ACCEPT": "text/plain"}, "tools/list"),
    ({"HTTP_ACCEPT": "application/json"}, "tools/list"),
    ({"HTTP_ACCEPT": ""}, "tools/list"),
    ({"HTTP_ACCEPT": "*/*"}, "tools/list"),
    ({"HTTP_MCP_PROTOCOL_VERSION": "1999-01-01"}, "tools/list"),
    ({"HTTP_MCP_PROTOCOL_VERSION": "2025-11-25"}, "no/such/method"),
    ({}, "ping"),
    ({"HTTP_MCP_METHOD": "tools/call"}, "tools/list"),
])
def test_every_status_mcp_answers_is_in_the_openapi_document(catalog, api, headers, method):
    from retrieval_app.mcp.route_schema import _openapi

    meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"_meta": meta}}
    sent = {"HTTP_ACCEPT": "application/json, text/event-stream", "HTTP_MCP_PROTOCOL_VERSION": MODERN,
            "HTTP_MCP_METHOD": method, **headers}
    response = api.post("/mcp", data=json.dumps(body), content_type="application/json", **sent)
    documented = _openapi()["paths"]["/mcp"]["post"]["responses"]
    assert str(response.status_code) in documented, (response.status_code, response.content[:300])
    assert response.status_code < 500 and response["Content-Type"].startswith("application/json")
    check(response, "POST", "/mcp", response.status_code)
