"""MCP clients nobody on the project wrote, against a live gunicorn and the stdio bridge: the MCP
Inspector CLI (both protocol eras over Streamable HTTP, and stdio), the official ``mcp`` SDK (2.x
here, 1.x in a throwaway virtualenv), ``fastmcp``'s ``Client`` and ``langchain-mcp-adapters``.
Each lists the tools and runs the ``mcp_sweep`` plan: every tool of the active declaration (read
from ``GET /tools``, so tools added to the example declaration are swept too) called 10 times
with realistic and bad arguments, 0 failures. The host configurations of the MCP page are
started verbatim by the Inspector, and every tool's ``outputSchema`` is the route's response
schema in the checked-in OpenAPI document."""
from __future__ import annotations

import json
import re
import sys

import pytest

from retrieval_app.mcp.listing import route_of
from retrieval_app.mcp.route_schema import route_output_schema

from . import mcp_client_runners as runners
from . import mcp_sweep
from .mcp_live import ROOT, live  # noqa: F401 (the fixture)

# The sweep takes minutes (every tool, ten calls, seven clients): a slow group of its own (docs/testing.md).
pytestmark = [pytest.mark.model, pytest.mark.clients]
MCP_PAGE = ROOT / "docs" / "api" / "mcp-tools.md"
OPENAPI = ROOT / "docs" / "openapi.json"


def rest(service, method: str, path: str, body=None):
    status, raw = service.server.request(method, path, json.dumps(body).encode() if body is not None else None,
                                         key=service.demo_key)
    assert status == 200, (method, path, status, raw[:500])
    return json.loads(raw)


@pytest.fixture(scope="module")
def sweep(live):
    """The listing, and a plan over it with ids that exist in ``demo``."""
    listing = rest(live, "GET", "/tools")
    record_ids = [record["id"] for record in rest(live, "GET", "/timeline?entity=contact.maria")["records"]]
    receipt = rest(live, "POST", "/retrieve", {"query": "Q3 budget", "entity": "contact.maria"})["receiptId"]
    passages = [hit["path"] for hit in rest(live, "GET", "/memory/latest?path=passages/main/contact.maria")["hits"]]
    facts = ["facts/main/contact.maria/preferred_channel"]  # a named fact of the sample records
    calls = mcp_sweep.plan(listing, mcp_sweep.Pools(record_ids=record_ids, receipt_ids=[receipt], fact_paths=facts,
                                                    passage_paths=passages))
    assert len(calls) == mcp_sweep.PER_TOOL * len(listing["tools"]) and listing["tools"]
    return listing, calls


@pytest.fixture(scope="module")
def inspector():
    reason = runners.inspector_install()
    if reason is not None:
        pytest.skip(reason)


def check(listing: dict, calls: list[dict], names: list[str], outcomes: list[dict]) -> None:
    assert names == [tool["name"] for tool in listing["tools"]]
    assert mcp_sweep.problems(listing, calls, outcomes) == []
    # The plan did what it says: every bad call refused, every realistic call of a known kind answered.
    assert sum(outcome["is_error"] for outcome in outcomes) >= sum(call["expect"] == "error" for call in calls)


@pytest.mark.parametrize("mode", ["legacy", "modern", "stdio"])
def test_the_mcp_inspector_cli_sweeps_every_tool(live, sweep, inspector, mode):
    listing, calls = sweep
    check(listing, calls, *runners.run_inspector(mode, live.url, live.demo_key, calls))


@pytest.mark.parametrize("mode", ["legacy", "modern", "stdio"])
def test_the_inspector_finds_no_portability_error_in_the_tool_schemas(live, inspector, mode):
    # --strict: exit status 6 when a tool's schema has an error-severity portability problem.
    done = runners.inspector(*runners.inspector_target(mode, live.url, live.demo_key), "--method", "tools/list",
                             "--strict")
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)["result"]["tools"]


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy", "stdio"])
def test_the_official_python_sdk_sweeps_every_tool(live, sweep, mode):
    listing, calls = sweep
    check(listing, calls, *runners.run_python_sdk(mode, live.url, live.demo_key, calls))


@pytest.mark.parametrize("mode", ["http", "stdio"])
def test_fastmcp_sweeps_every_tool(live, sweep, mode):
    listing, calls = sweep
    check(listing, calls, *runners.run_fastmcp(mode, live.url, live.demo_key, calls))


@pytest.mark.parametrize("client", ["mcp1", "langchain"])
@pytest.mark.parametrize("mode", ["http", "stdio"])
def test_the_1x_sdk_and_langchain_adapters_sweep_every_tool(live, sweep, client, mode):
    listing, calls = sweep
    check(listing, calls, *runners.run_other_client(client, mode, live.url, live.demo_key, calls))


def test_every_output_schema_is_the_routes_schema_in_the_checked_in_openapi_document(live):
    document = json.loads(OPENAPI.read_text())
    for tool in rest(live, "GET", "/tools")["tools"]:
        method, template = route_of(tool["kind"], tool["binding"].get("lookup"))
        documented = route_output_schema(method, template, document)
        assert documented is not None and tool["output_schema"] == documented, tool["name"]


def page_configurations() -> list[dict]:
    """The MCP page's host configurations (``{"mcpServers": ...}`` blocks), exactly as written."""
    blocks = re.findall(r"```json\n(.*?)```", MCP_PAGE.read_text(), flags=re.S)
    return [json.loads(block) for block in blocks if "mcpServers" in block]


def filled(configuration: dict, url: str, key: str) -> dict:
    """The page's placeholders (this checkout, its interpreter, the server and the key) filled;
    nothing else changed."""
    text = json.dumps(configuration)
    for placeholder, value in (("/path/to/memseek/.venv/bin/python", sys.executable),
                               ("/path/to/memseek", str(ROOT)), ("http://127.0.0.1:8000", url),
                               ("<workspace key>", key)):
        text = text.replace(placeholder, value)
    return json.loads(text)


def test_the_pages_host_configurations_start_and_answer_in_the_inspector(live, inspector, tmp_path):
    configurations = page_configurations()
    assert sorted("command" in block["mcpServers"]["memseek"] for block in configurations) == [False, True]
    for index, configuration in enumerate(configurations):
        path = tmp_path / f"host-{index}.json"
        path.write_text(json.dumps(filled(configuration, live.url, live.demo_key)))
        target = ("--config", str(path), "--server", "memseek")
        listed = runners.inspector_json(runners.inspector(*target, "--method", "tools/list"))
        assert [tool["name"] for tool in listed["result"]["tools"]][:1] == ["customer_context"], listed
        outcome = runners.inspector_outcome(runners.inspector(
            *target, "--method", "tools/call", "--tool-name", "search_memory",
            "--tool-args-json", json.dumps({"query": "Q3 budget", "entity": "contact.maria"})))
        assert outcome["failure"] is None and not outcome["is_error"], outcome
        assert "receiptId" in outcome["structured"]
