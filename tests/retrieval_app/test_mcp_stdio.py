"""The stdio bridge as an agent host runs it: the MCP page's (docs/api/mcp-tools.md) configuration verbatim (an absolute
interpreter path, no activated virtualenv), 503s at start-up and mid-session ridden out through
a loopback proxy that injects them, the tool list cached per ``ETag``, and a start that imports
neither Django nor Celery."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters

from .mcp_live import OTHER_DECLARATION, ROOT, envelope, live  # noqa: F401 (the fixture)
from tests.conftest import EXAMPLE_TOOL_NAMES

pytestmark = pytest.mark.model
MCP_PAGE = ROOT / "docs" / "api" / "mcp-tools.md"
PLACEHOLDER_ROOT = "/path/to/memseek"
PLACEHOLDER_PYTHON = PLACEHOLDER_ROOT + "/.venv/bin/python"


class FaultProxy:
    """A loopback HTTP proxy to ``target`` that answers the next ``fail`` requests 503 itself
    (``Retry-After: 0``) and logs every request as (method, path, status)."""

    def __init__(self, target: str):
        self.fail = 0
        self.log: list[tuple[str, str, int]] = []
        self._lock = threading.Lock()
        proxy = self
        upstream = httpx.Client(base_url=target, timeout=180)

        class Handler(BaseHTTPRequestHandler):
            def _forward(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with proxy._lock:
                    refuse = proxy.fail > 0
                    proxy.fail -= 1 if refuse else 0
                if refuse:
                    status, content, headers = 503, b'{"error":"database_unavailable","detail":"injected"}', {
                        "Content-Type": "application/json", "Retry-After": "0"}
                else:
                    forwarded = {name: value for name, value in self.headers.items()
                                 if name.lower() in ("authorization", "content-type", "if-none-match", "accept")}
                    answer = upstream.request(self.command, self.path, content=body or None, headers=forwarded)
                    status, content = answer.status_code, answer.content
                    headers = {name: answer.headers[name] for name in ("Content-Type", "ETag")
                               if name in answer.headers}
                with proxy._lock:
                    proxy.log.append((self.command, self.path.split("?")[0], status))
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            do_GET = do_POST = _forward

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self._upstream = upstream

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def count(self, method: str, path: str, status: int) -> int:
        with self._lock:
            return sum(1 for entry in self.log if entry == (method, path, status))

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._upstream.close()


@pytest.fixture
def proxy(live):
    proxy = FaultProxy(live.url)
    yield proxy
    proxy.close()


def readme_stdio_configuration() -> dict:
    """The MCP page's stdio host configuration, exactly as written."""
    blocks = re.findall(r"```json\n(.*?)```", MCP_PAGE.read_text(), flags=re.S)
    stdio = [json.loads(block) for block in blocks if '"command"' in block and "mcpServers" in block]
    assert len(stdio) == 1, "the MCP page shows one stdio host configuration"
    return stdio[0]["mcpServers"]["memseek"]


def host_client(configuration: dict, url: str, key: str) -> Client:
    """``configuration`` started as an agent host does: the command and args as given (the
    page's placeholders filled with this checkout and this interpreter), the env block with
    the service's URL and key, no working directory and no activated virtualenv."""
    def filled(text: str) -> str:
        return text.replace(PLACEHOLDER_PYTHON, sys.executable).replace(PLACEHOLDER_ROOT, str(ROOT))

    env = {name: value.replace("http://127.0.0.1:8000", url).replace("<workspace key>", key)
           for name, value in configuration["env"].items()}
    return Client(StdioServerParameters(command=filled(configuration["command"]),
                                        args=[filled(arg) for arg in configuration["args"]], env=env, cwd="/"))


def run(client: Client, steps):
    async def main():
        async with client as session:
            return await steps(session)
    return anyio.run(main)


def test_the_readme_configuration_starts_without_an_activated_virtualenv_and_answers(live):
    configuration = readme_stdio_configuration()
    assert configuration["command"] == PLACEHOLDER_PYTHON and configuration["args"][0].startswith(PLACEHOLDER_ROOT)

    async def steps(session):
        names = [tool.name for tool in (await session.list_tools()).tools]
        return names, await session.call_tool("search_memory", {"query": "Q3 budget", "entity": "contact.maria"})

    names, result = run(host_client(configuration, live.url, live.demo_key), steps)
    assert names == EXAMPLE_TOOL_NAMES
    assert not result.is_error and "receiptId" in result.structured_content


def test_503s_at_start_up_and_mid_session_are_retried(live, proxy):
    proxy.fail = 3  # the bridge's first GET /tools meets three 503s

    async def steps(session):
        listed = [tool.name for tool in (await session.list_tools()).tools]
        proxy.fail = 2  # the next call's revalidation or route meets two more
        result = await session.call_tool("search_memory", {"query": "Q3 budget", "entity": "contact.maria"})
        return listed, result

    listed, result = run(host_client(readme_stdio_configuration(), proxy.url, live.demo_key), steps)
    assert listed[0] == "customer_context"
    assert not result.is_error, result.content
    assert proxy.fail == 0 and sum(1 for entry in proxy.log if entry[2] == 503) == 5


def test_a_503_beyond_the_retry_budget_is_a_tool_error_not_a_dead_bridge(live, proxy):
    async def steps(session):
        await session.list_tools()
        proxy.fail = 6 + 6  # the revalidation's 6 attempts (the cached list stands), then the route's 6
        failed = await session.call_tool("search_memory", {"query": "Q3 budget"})
        proxy.fail = 0
        recovered = await session.call_tool("search_memory", {"query": "Q3 budget", "entity": "contact.maria"})
        return failed, recovered

    failed, recovered = run(host_client(readme_stdio_configuration(), proxy.url, live.demo_key), steps)
    assert proxy.fail == 0 and sum(1 for entry in proxy.log if entry[2] == 503) == 12
    assert envelope(failed)["status"] == 503
    assert not recovered.is_error


def test_the_tool_list_is_read_once_per_declaration_hash(live, proxy, tmp_path):
    async def steps(session):
        for _ in range(3):
            await session.list_tools()
            await session.call_tool("open_record", {"id": "not-a-uuid"})
        live.load_other(tmp_path, {**OTHER_DECLARATION, "version": 2, "tools": OTHER_DECLARATION["tools"][:1]})
        after = [tool.name for tool in (await session.list_tools()).tools]
        await session.call_tool("open_record", {"id": "not-a-uuid"})
        return after

    after = run(host_client(readme_stdio_configuration(), proxy.url, live.other_key), steps)
    assert after == ["open_record"]
    # One full read at start, one after the declaration changed; every other use was a 304.
    assert proxy.count("GET", "/tools", 200) == 2
    assert proxy.count("GET", "/tools", 304) == 6 + 1


def test_the_bridge_imports_neither_django_nor_celery(live):
    done = subprocess.run([sys.executable, "-X", "importtime", str(ROOT / "manage.py"), "mcp", "--check"],
                          env={"MEMSEEK_URL": live.url, "MEMSEEK_API_KEY": live.demo_key}, cwd="/",
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "mcp.server.lowlevel.server" in imported  # the measurement saw the bridge's imports
    assert not {name for name in imported if name.split(".")[0] in ("django", "celery", "rest_framework",
                                                                      "memseek_site", "catalog_app")}
