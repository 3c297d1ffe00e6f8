"""The OpenAI Agents SDK tools against a live server, invoked the way the Agents runner invokes
them (``FunctionTool.on_invoke_tool`` with a ``ToolContext`` and the model's JSON arguments;
no model is called): their schemas, what each returns, and the errors the model reads."""
from __future__ import annotations

import asyncio
import json

import pytest
from agents import FunctionTool
from agents.tool_context import ToolContext

from memseek_client import RecordInput
from memseek_client.integrations.openai_agents_tools import memseek_tools

from .conftest import LIVE, require_route

pytestmark = LIVE


@pytest.fixture
def tools(client):
    return {tool.name: tool for tool in memseek_tools(client, entity="contact.noor")}


def invoke(tool: FunctionTool, arguments: dict | str):
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    context = ToolContext(context=None, tool_name=tool.name, tool_call_id="call-1", tool_arguments=text)
    return json.loads(asyncio.run(tool.on_invoke_tool(context, text)))


def test_the_tools_schemas_are_strict_and_describe_their_arguments(tools):
    assert set(tools) == {"search_memory", "remember", "memory_brief"}
    for tool in tools.values():
        assert isinstance(tool, FunctionTool) and tool.strict_json_schema and tool.description
        assert tool.params_json_schema["additionalProperties"] is False
    assert tools["search_memory"].params_json_schema["required"] == ["query", "k"]
    assert set(tools["remember"].params_json_schema["properties"]) == {"text", "key"}
    assert "city" in tools["remember"].params_json_schema["properties"]["key"]["description"]
    assert tools["memory_brief"].params_json_schema["required"] == ["question"]


def test_remember_then_search_finds_it_and_only_this_entitys_memory(tools, client):
    client.write_records([RecordInput(entity="contact.other", collection="main", type="note",
                                      text="Noor's cousin plays the cello in Lyon.")])
    stored = invoke(tools["remember"], {"text": "Noor plays the cello on Tuesdays.", "key": None})
    assert stored["stored"] is True
    assert client.get_record(stored["id"]).entity == "contact.noor"
    found = invoke(tools["search_memory"], {"query": "cello", "k": 5})
    assert [hit["id"] for hit in found["hits"]] == [stored["id"]]
    assert found["hits"][0]["text"] == "Noor plays the cello on Tuesdays." and found["hits"][0]["score"] is not None


def test_remember_with_a_key_replaces_the_named_fact(tools, client):
    first = invoke(tools["remember"], {"text": "Noor lives in Porto.", "key": "city"})
    second = invoke(tools["remember"], {"text": "Noor lives in Lisbon.", "key": "city"})
    [belief] = [b for b in client.document("contact.noor").beliefs if b.key == "city"]
    assert belief.id == second["id"] != first["id"] and belief.text == "Noor lives in Lisbon."


def test_the_brief_answers_from_the_entitys_memory(tools, client, listed_routes):
    require_route(listed_routes, "POST", "/memory/search")
    invoke(tools["remember"], {"text": "Noor's favourite dessert is pastel de nata.", "key": None})
    brief = invoke(tools["memory_brief"], {"question": "What is Noor's favourite dessert?"})
    assert set(brief) == {"held", "known", "worked_out", "hits"}
    assert any("pastel de nata" in hit["text"] for hit in brief["hits"])
    assert all(hit["path"].startswith("passages/main/contact.noor/") for hit in brief["hits"])


@pytest.mark.parametrize(("name", "arguments", "code", "path"), [
    ("search_memory", {"query": "x", "k": 0}, "request_schema", "k"),
    ("search_memory", {"query": "x" * 9000, "k": 3}, None, "query"),
    ("search_memory", {"query": "", "k": 3}, None, "query"),
    ("remember", {"text": "x", "key": "k" * 129}, None, "key"),
    ("memory_brief", {"question": ""}, None, "question"),
    ("remember", {"text": "x" * 70_000, "key": None}, "text_too_large", "text"),
])
def test_a_refused_call_answers_the_servers_error_and_writes_nothing(tools, client, name, arguments, code, path):
    before = client.timeline("contact.noor").records
    answer = invoke(tools[name], arguments)
    assert 400 <= answer["status"] < 500 and answer["path"] == path and answer["detail"]
    if code is not None:
        assert answer["error"] == code
    assert client.timeline("contact.noor").records == before


def test_arguments_that_are_not_the_schema_never_reach_the_server(tools):
    context = ToolContext(context=None, tool_name="search_memory", tool_call_id="c", tool_arguments="{nope")
    answer = asyncio.run(tools["search_memory"].on_invoke_tool(context, "{nope"))
    assert isinstance(answer, str) and answer.startswith("An error occurred while running the tool")
