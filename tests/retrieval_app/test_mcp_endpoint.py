"""``GET /tools`` and ``POST /mcp`` in-process (Django's test client, the test database):
the listing's schemas and bindings, the REST rules ``/mcp`` applies before the SDK sees a byte
(origin, bearer, body size, strict JSON), and tool results for refused calls. The SDK's own
client against a live server is ``test_mcp_transports``."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from rest_framework.test import APIClient

from catalog_app.models import Definition, Record
from catalog_app.services.catalog_load import catalog_load
from catalog_app.services.workspaces import workspace_create
from tests.memseek_site.test_openapi_responses import check
from tests.conftest import EXAMPLE_TOOL_NAMES

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "catalogs"
MODERN = "2026-07-28"


def rpc(client, method: str, params: dict | None = None, **headers):
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**(params or {}), "_meta": meta}}
    return client.post("/mcp", data=json.dumps(body), content_type="application/json",
                       HTTP_ACCEPT="application/json, text/event-stream", HTTP_MCP_PROTOCOL_VERSION=MODERN,
                       HTTP_MCP_METHOD=method, **({"HTTP_MCP_NAME": params["name"]} if method == "tools/call"
                                                  else {}), **headers)


def call(client, name: str, arguments) -> dict:
    response = rpc(client, "tools/call", {"name": name, "arguments": arguments})
    assert response.status_code == 200, response.content
    return response.json()["result"]


def failure(result: dict) -> dict:
    """A failed call's error envelope (and ``status``): its text, with no ``structuredContent``
    (which clients would check against the tool's success schema)."""
    assert result["isError"] is True and "structuredContent" not in result, result
    return json.loads(result["content"][0]["text"])


def tools(api) -> dict:
    response = api.get("/tools")
    assert response.status_code == 200
    return {tool["name"]: tool for tool in response.json()["tools"]}


def test_the_listing_names_bindings_routes_and_hashes(catalog, api):
    listing = api.get("/tools").json()
    assert listing["interface"]["name"] == "agent" and listing["interface"]["version"] == 1
    by_name = {tool["name"]: tool for tool in listing["tools"]}
    view = api.get("/views").json()["views"]
    declared = next(v for v in view if v["name"] == "customer_context" and v["version"] == 1)
    assert by_name["customer_context"]["binding"] == {"kind": "view", "name": "customer_context", "version": 1,
                                                      "hash": declared["hash"], "active": True}
    assert by_name["customer_context"]["input_schema"] == declared["input_schema"]
    assert by_name["customer_context"]["route"] == {"method": "POST", "path": "/views/customer_context/query",
                                                    "available": True}
    assert by_name["open_record"]["route"]["path"] == "/records/{id}"
    assert by_name["open_record"]["input_schema"]["required"] == ["id"]
    assert by_name["search_memory"]["input_schema"]["required"] == ["query"]
    assert len({tool["hash"] for tool in listing["tools"]}) == len(listing["tools"])


def test_an_ingest_tool_offers_the_collection_schema_and_no_lineage(catalog, api):
    remember = tools(api)["remember"]
    stored = Definition.objects.get(workspace=catalog, family="collection", name="main", version=1)
    schema = remember["input_schema"]
    # The tool's text fills content.text, so the offered content does not require it.
    assert schema["properties"]["content"] == {**stored.body["schema"], "required": [
        name for name in stored.body["schema"]["required"] if name != "text"]}
    assert schema["additionalProperties"] is False and set(schema["required"]) == {"entity", "type", "text"}
    assert not {"derived_from", "scores", "status", "tombstone", "annotations", "collection"} & set(
        schema["properties"])
    assert remember["annotations"]["readOnlyHint"] is False and remember["annotations"]["idempotentHint"] is False


def test_graph_view_tools_are_narrowed_to_the_deployment_ceilings(tmp_path, workspace, api, settings):
    directory = tmp_path / "graph"
    shutil.copytree(FIXTURES / "graph", directory)
    (directory / "mcp").mkdir()
    (directory / "mcp" / "graph.yaml").write_text(yaml.safe_dump({
        "name": "graph", "version": 1, "active": True, "title": "Graph", "instructions": "Walk the graph.",
        "tools": [{"name": "walk", "kind": "view", "view": {"name": "page_graph", "version": 1},
                   "description": "Walk from a page."}]}))
    catalog_load(workspace=workspace, directory=directory)
    settings.MEMSEEK = {"MAX_GRAPH_DEPTH": 3, "MAX_GRAPH_PATHS": 50}
    schema = tools(api)["walk"]["input_schema"]["properties"]
    view = next(v for v in api.get("/views").json()["views"] if v["name"] == "page_graph")
    assert view["input_schema"]["properties"]["depth"]["maximum"] == 16
    assert (schema["depth"]["maximum"], schema["limit"]["maximum"]) == (3, 50)


def test_no_declaration_exports_nothing_and_other_workspaces_are_apart(catalog, api, db):
    _, key = workspace_create(name="bare")
    bare = APIClient()
    bare.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert bare.get("/tools").json()["tools"] == [] and bare.get("/tools").json()["interface"] is None
    assert rpc(bare, "tools/list").json()["result"]["tools"] == []
    unknown = rpc(bare, "tools/call", {"name": "open_record", "arguments": {"id": "x"}}).json()
    assert unknown["error"]["code"] == -32602 and "result" not in unknown
    assert list(tools(api)) == EXAMPLE_TOOL_NAMES


def test_tools_takes_no_query_parameters(catalog, api):
    response = api.get("/tools?verbose=1")
    assert response.status_code == 422 and response.json()["error"] == "request_schema"


def test_a_view_tool_bound_to_a_version_that_is_no_longer_active_refuses_calls(tmp_path, catalog, api):
    directory = tmp_path / "catalog"
    shutil.copytree(FIXTURES / "example", directory)
    declaration = yaml.safe_load((directory / "mcp" / "agent.yaml").read_text())
    declaration.update(version=2, tools=[{"name": "old", "kind": "view", "description": "Old search.",
                                          "view": {"name": "customer_context", "version": 2}}])
    (directory / "mcp" / "agent.yaml").write_text(yaml.safe_dump(declaration))
    catalog_load(workspace=catalog, directory=directory)
    assert tools(api)["old"]["binding"]["active"] is False
    result = call(api, "old", {"entity": "contact.maria", "task": "budget"})
    assert failure(result)["error"] == "tool_binding_inactive"


def test_a_refused_ingest_writes_nothing(catalog, api):
    before = Record.objects.count()
    refused = call(api, "remember", {"entity": "contact.maria", "type": "note", "content": {"text": "x"},
                                     "text": "x", "tombstone": True})
    invalid = call(api, "remember", {"entity": "contact.maria", "type": "note", "content": {"speaker": 3}})
    assert failure(refused)["path"] == "tombstone"
    assert failure(invalid)["status"] == 422
    assert Record.objects.count() == before


@pytest.mark.parametrize(("arguments", "code", "path"), [
    ({"entity": "contact.maria", "task": "x", "color": "red"}, "view_parameter", "color"),
    ({"entity": 7, "task": "x"}, "view_parameter", "entity"),
    ({"entity": "contact.maria", "task": "x", "k": 1000}, "view_parameter", "k"),
])
def test_bad_view_arguments_are_the_routes_errors(catalog, api, arguments, code, path):
    result = call(api, "customer_context", arguments)
    assert result["isError"] is True
    assert (failure(result)["error"], failure(result)["path"]) == (code, path)


def test_an_unlisted_origin_is_refused_before_authentication(catalog, api, settings):
    assert rpc(APIClient(), "tools/list", HTTP_ORIGIN="https://evil.example").status_code == 403
    refused = rpc(api, "tools/list", HTTP_ORIGIN="https://evil.example")
    assert refused.status_code == 403 and refused.json()["error"] == "origin_not_allowed"
    settings.MEMSEEK = {"MCP_ALLOWED_ORIGINS": "https://app.example, https://other.example"}
    assert rpc(api, "tools/list", HTTP_ORIGIN="https://app.example").status_code == 200
    assert rpc(api, "tools/list", HTTP_ORIGIN="https://app.example.evil").status_code == 403


def test_a_missing_or_wrong_key_is_unauthorized(catalog):
    anonymous = rpc(APIClient(), "tools/list")
    assert anonymous.status_code == 401 and anonymous.json()["error"] == "unauthorized"
    wrong = APIClient()
    wrong.credentials(HTTP_AUTHORIZATION="Bearer not-a-key")
    assert rpc(wrong, "tools/list").status_code == 401


def test_only_post_is_served(catalog, api):
    response = api.get("/mcp")
    assert response.status_code == 405 and response.json()["error"] == "method_not_allowed"


@pytest.mark.parametrize(("raw", "status", "code"), [
    (b'{"jsonrpc": "2.0", "id": 1, "id": 2, "method": "tools/list"}', 422, "duplicate_key"),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list\\u0000"}', 422, "invalid_character"),
    (b"[" * 100 + b"]" * 100, 422, "json_too_deep"),
    (b'{"jsonrpc": "2.0", "id": 1, "method": ', 422, "invalid_json"),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"n": 1e999}}', 422, "number_out_of_range"),
])
def test_hostile_bodies_get_the_rest_body_rules(catalog, api, raw, status, code):
    response = api.generic("POST", "/mcp", raw, content_type="application/json",
                           HTTP_ACCEPT="application/json, text/event-stream")
    assert response.status_code == status and response.json()["error"] == code


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", ""])
def test_a_body_that_is_not_json_by_its_content_type_is_415_in_the_envelope(catalog, api, content_type):
    response = api.generic("POST", "/mcp", b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}',
                           content_type=content_type, HTTP_ACCEPT="application/json, text/event-stream",
                           HTTP_MCP_PROTOCOL_VERSION=MODERN)
    assert response.status_code == 415 and response.json()["error"] == "unsupported_media_type"


def test_a_body_over_the_limit_is_refused_unread(catalog, api, settings):
    settings.MEMSEEK = {"MAX_BODY_BYTES": 64}
    response = rpc(api, "tools/call", {"name": "customer_context", "arguments": {"task": "x" * 100}})
    assert response.status_code == 413 and response.json()["error"] == "body_too_large"


def test_a_batch_or_wrongly_typed_message_is_a_json_rpc_error(catalog, api):
    for raw in (b'[{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}]', b'{"jsonrpc": "2.0", "id": 1, "method": 5}'):
        response = api.generic("POST", "/mcp", raw, content_type="application/json",
                               HTTP_ACCEPT="application/json, text/event-stream", HTTP_MCP_PROTOCOL_VERSION=MODERN)
        assert response.status_code == 400 and "error" in response.json() and "jsonrpc" in response.json()


def post_message(client, message) -> object:
    return client.generic("POST", "/mcp", json.dumps(message).encode(), content_type="application/json",
                          HTTP_ACCEPT="application/json, text/event-stream")


@pytest.mark.parametrize(("message", "where"), [
    ({"jsonrpc": "2.0", "method": "notifications/initialized", "extra": 1}, "'extra' was unexpected"),
    ({"jsonrpc": "2.0", "method": "notifications/initialized", "id": None}, "id: None is not of type"),
    ({"jsonrpc": "2.0", "method": "notifications/initialized", "id": 1.5}, "id: 1.5 is not of type"),
    ({"jsonrpc": "2.0", "method": "notifications/initialized", "id": True}, "id: True is not of type"),
    ({"jsonrpc": "2.0", "method": "notifications/initialized", "params": None}, "params: None is not of type"),
    ({"jsonrpc": "2.0", "method": "notifications/initialized", "params": []}, "params: [] is not of type"),
    ({"jsonrpc": "1.0", "method": "notifications/initialized"}, "jsonrpc: '2.0' was expected"),
    ({"method": "notifications/initialized"}, "'jsonrpc' is a required property"),
    ({"jsonrpc": "2.0", "id": 3, "result": {}, "extra": 2}, "'extra' was unexpected"),
    ({"jsonrpc": "2.0", "id": 3, "error": {"code": 1}}, "error: 'message' is a required property"),
    ({"jsonrpc": "2.0", "id": 3, "result": {}, "error": {"code": 1, "message": "m"}}, "is not valid under any"),
    ({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "extra": 1}, "'extra' was unexpected"),
])
def test_a_message_the_document_refuses_is_400_with_a_json_rpc_error_without_id(catalog, api, message, where):
    # The SDK alone answered the malformed notifications and responses 202 and the request 200.
    response = post_message(api, message)
    assert response.status_code == 400, response.content
    answer = response.json()
    assert (answer["jsonrpc"], answer["id"], answer["error"]["code"]) == ("2.0", None, -32600)
    assert answer["error"]["message"].startswith("Invalid Request: ") and where in answer["error"]["message"]
    check(response, "POST", "/mcp", 400)


@pytest.mark.parametrize("message", [
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}},
    {"jsonrpc": "2.0", "id": "s-1", "result": {}},
    {"jsonrpc": "2.0", "id": 4.0, "error": {"code": -1.0, "message": "refused", "data": [1]}},
])
def test_a_well_formed_notification_or_response_is_accepted_with_202(catalog, api, message):
    response = post_message(api, message)
    assert response.status_code == 202, response.content
    assert response.content == b""


def test_responses_match_the_openapi_document(catalog, api):
    check(api.get("/tools"), "GET", "/tools")
    check(APIClient().get("/tools"), "GET", "/tools", 401)
    check(rpc(api, "tools/list"), "POST", "/mcp")
    check(rpc(APIClient(), "tools/list"), "POST", "/mcp", 401)
    check(rpc(api, "tools/list", HTTP_ORIGIN="https://evil.example"), "POST", "/mcp", 403)
