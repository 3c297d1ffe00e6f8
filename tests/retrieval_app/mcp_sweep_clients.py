"""The sweep's plan run by clients that cannot share the project's virtualenv: the official
``mcp`` SDK's 1.x line (the project runs 2.x) and ``langchain-mcp-adapters`` (which requires
1.x). ``test_mcp_clients`` runs this file with the interpreter of a throwaway virtualenv under
``var/`` holding ``mcp_sweep_clients.txt``; it imports nothing of the project.

    python mcp_sweep_clients.py {mcp1|langchain} {http|stdio} < job.json > outcomes.json

``job.json``: ``{"url", "key", "stdio": {"command", "args", "env", "cwd"}, "calls": [{"tool",
"arguments"}]}``. The answer: ``{"tools": [names listed], "outcomes": [{"is_error",
"structured", "text", "failure"}]}``, one outcome per call, in order; an exception a call raises
is its ``failure`` and the session goes on when it can.
"""
from __future__ import annotations

import json
import sys
from contextlib import asynccontextmanager

import anyio


@asynccontextmanager
async def mcp1_session(job: dict, transport: str):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamablehttp_client

    if transport == "http":
        opened = streamablehttp_client(f"{job['url']}/mcp", headers={"Authorization": f"Bearer {job['key']}"},
                                       timeout=180, sse_read_timeout=180)
    else:
        opened = stdio_client(StdioServerParameters(**job["stdio"]))
    async with opened as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            yield session


async def run_mcp1(job: dict, transport: str) -> dict:
    async with mcp1_session(job, transport) as session:
        names = [tool.name for tool in (await session.list_tools()).tools]
        outcomes = []
        for call in job["calls"]:
            try:
                result = await session.call_tool(call["tool"], call["arguments"])
            except Exception as error:  # the sweep records it as this call's failure
                outcomes.append({"failure": f"{type(error).__name__}: {error}"})
                continue
            texts = [block.text for block in result.content if block.type == "text"]
            outcomes.append({"is_error": bool(result.isError), "structured": result.structuredContent,
                             "text": texts[0] if texts else None, "failure": None})
        return {"tools": names, "outcomes": outcomes}


async def run_langchain(job: dict, transport: str) -> dict:
    """As a LangChain agent runs the tools: ``load_mcp_tools`` over one session, each call a
    ``ToolCall`` answered by a ``ToolMessage`` (``status`` "error" for a tool error)."""
    from langchain_mcp_adapters.client import MultiServerMCPClient
    from langchain_mcp_adapters.tools import load_mcp_tools

    if transport == "http":
        connection = {"transport": "streamable_http", "url": f"{job['url']}/mcp",
                      "headers": {"Authorization": f"Bearer {job['key']}"}}
    else:
        connection = {"transport": "stdio", **job["stdio"]}
    client = MultiServerMCPClient({"memseek": connection})
    async with client.session("memseek") as session:
        tools = {tool.name: tool for tool in await load_mcp_tools(session)}
        outcomes = []
        for index, call in enumerate(job["calls"]):
            try:
                message = await tools[call["tool"]].ainvoke(
                    {"type": "tool_call", "id": f"call-{index}", "name": call["tool"], "args": call["arguments"]})
            except Exception as error:  # the sweep records it as this call's failure
                outcomes.append({"failure": f"{type(error).__name__}: {error}"})
                continue
            artifact = message.artifact or {}
            outcomes.append({"is_error": message.status == "error", "structured": artifact.get("structured_content"),
                             "text": _text(message.content), "failure": None})
        return {"tools": list(tools), "outcomes": outcomes}


def _text(content) -> str | None:
    if isinstance(content, str):
        return content
    texts = [block["text"] if isinstance(block, dict) else str(block) for block in content
             if not isinstance(block, dict) or block.get("type") == "text"]
    return texts[0] if texts else None


def main() -> int:
    client, transport = sys.argv[1], sys.argv[2]
    job = json.load(sys.stdin)
    runner = {"mcp1": run_mcp1, "langchain": run_langchain}[client]
    json.dump(anyio.run(runner, job, transport), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
