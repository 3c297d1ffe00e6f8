"""The outside clients the MCP sweep drives, each running a ``mcp_sweep`` plan against a live
server and answering one outcome per call (``{"is_error", "structured", "text", "failure"}``):

* the MCP Inspector CLI (npm ``@modelcontextprotocol/inspector``, pinned with its lock file in
  ``tests/retrieval_app/inspector/``, installed by ``npm ci`` into ``var/inspector``), one
  process per call, over Streamable HTTP in the legacy and the modern protocol era and over stdio;
* the official ``mcp`` SDK (2.x, this virtualenv) and ``fastmcp``'s ``Client``, one session each;
* the ``mcp`` SDK's 1.x line and ``langchain-mcp-adapters``, which need ``mcp`` 1.x: they run in
  a throwaway virtualenv under ``var/`` (``mcp_sweep_clients.py``, ``mcp_sweep_clients.txt``).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from .mcp_live import ROOT

HERE = Path(__file__).resolve().parent
INSPECTOR_PACKAGE = HERE / "inspector"
INSPECTOR_DIR = ROOT / "var" / "inspector"
INSPECTOR_BIN = INSPECTOR_DIR / "node_modules" / ".bin" / "mcp-inspector"
OTHER_CLIENTS_REQUIREMENTS = HERE / "mcp_sweep_clients.txt"
OTHER_CLIENTS_VENV = ROOT / "var" / "mcp-sweep-venv"


def bridge_command(url: str, key: str) -> dict:
    """``manage.py mcp`` as an agent host starts it: this interpreter and the script by absolute
    path, the API's URL and key in the environment, ``/`` as working directory."""
    return {"command": sys.executable, "args": [str(ROOT / "manage.py"), "mcp"], "cwd": "/",
            "env": {"MEMSEEK_URL": url, "MEMSEEK_API_KEY": key, "PATH": os.environ.get("PATH", "")}}


# --- the MCP Inspector CLI ---------------------------------------------------------------------

def inspector_install() -> str | None:
    """Install the pinned Inspector into ``var/inspector`` unless the lock there is already this
    one; the reason it cannot be, or None."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        return "node and npm are not installed (Debian nodejs/npm: the MCP Inspector CLI runs on node)"
    lock = (INSPECTOR_PACKAGE / "package-lock.json").read_bytes()
    installed = INSPECTOR_DIR / "package-lock.json"
    if INSPECTOR_BIN.exists() and installed.exists() and installed.read_bytes() == lock:
        return None
    shutil.rmtree(INSPECTOR_DIR, ignore_errors=True)
    INSPECTOR_DIR.mkdir(parents=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy(INSPECTOR_PACKAGE / name, INSPECTOR_DIR / name)
    done = subprocess.run(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"], cwd=INSPECTOR_DIR,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"npm ci of the MCP Inspector failed:\n{done.stdout}\n{done.stderr}"
    return None


def inspector_target(mode: str, url: str, key: str) -> list[str]:
    """The Inspector CLI's arguments naming the server: ``legacy`` / ``modern`` (Streamable HTTP
    in that protocol era) or ``stdio`` (the bridge)."""
    if mode == "stdio":
        bridge = bridge_command(url, key)
        return ["--transport", "stdio", "--cwd", bridge["cwd"],
                *(arg for name, value in bridge["env"].items() for arg in ("-e", f"{name}={value}")),
                bridge["command"], *bridge["args"]]
    return ["--server-url", f"{url}/mcp", "--transport", "http", "--protocol-era", mode,
            "--header", f"Authorization: Bearer {key}"]


def inspector(*arguments: str) -> subprocess.CompletedProcess:
    """One Inspector CLI run (JSON output), its catalog and OAuth state kept under ``var/``."""
    home = INSPECTOR_DIR / "home"
    home.mkdir(exist_ok=True)
    return subprocess.run([str(INSPECTOR_BIN), "--cli", "--format", "json", *arguments], cwd=INSPECTOR_DIR,
                          env={**os.environ, "HOME": str(home), "NO_UPDATE_NOTIFIER": "1"},
                          capture_output=True, text=True, timeout=300)


def inspector_json(done: subprocess.CompletedProcess) -> dict:
    try:
        return json.loads(done.stdout)
    except ValueError:
        return {"error": {"message": f"exit {done.returncode}, no JSON on stdout: {done.stdout[-300:]} "
                                     f"{done.stderr[-600:]}"}}


# The CLI's exit status for a call whose result is a tool error (``isError: true``).
INSPECTOR_TOOL_ERROR_EXIT = 5


def inspector_outcome(done: subprocess.CompletedProcess) -> dict:
    answer = inspector_json(done)
    result = answer.get("result")
    expected_exit = INSPECTOR_TOOL_ERROR_EXIT if isinstance(result, dict) and result.get("isError") else 0
    if result is None or done.returncode != expected_exit:
        return {"failure": f"exit {done.returncode}: {json.dumps(answer.get('error', answer))[:600]}"}
    texts = [block["text"] for block in result.get("content", []) if block.get("type") == "text"]
    return {"is_error": bool(result.get("isError")), "structured": result.get("structuredContent"),
            "text": texts[0] if texts else None, "failure": None}


def run_inspector(mode: str, url: str, key: str, calls: list[dict]) -> tuple[list[str], list[dict]]:
    target = inspector_target(mode, url, key)
    listed = inspector_json(inspector(*target, "--method", "tools/list"))
    names = [tool["name"] for tool in listed.get("result", {}).get("tools", [])]
    outcomes = [inspector_outcome(inspector(*target, "--method", "tools/call", "--tool-name", call["tool"],
                                            "--tool-args-json", json.dumps(call["arguments"])))
                for call in calls]
    return names, outcomes


# --- clients in this virtualenv ----------------------------------------------------------------

def _sdk_outcome(result) -> dict:
    texts = [block.text for block in result.content if block.type == "text"]
    return {"is_error": bool(result.is_error), "structured": result.structured_content,
            "text": texts[0] if texts else None, "failure": None}


async def _sweep_session(session, list_tools, call_tool, calls: list[dict]) -> tuple[list[str], list[dict]]:
    names = [tool.name for tool in await list_tools(session)]
    outcomes = []
    for call in calls:
        try:
            outcomes.append(_sdk_outcome(await call_tool(session, call["tool"], call["arguments"])))
        except Exception as error:  # the sweep records it as this call's failure
            outcomes.append({"failure": f"{type(error).__name__}: {error}"})
    return names, outcomes


def run_python_sdk(mode: str, url: str, key: str, calls: list[dict]) -> tuple[list[str], list[dict]]:
    """The official SDK's ``Client``: ``2026-07-28`` / ``legacy`` over Streamable HTTP, or ``stdio``."""
    if mode == "stdio":
        bridge = bridge_command(url, key)
        client = Client(StdioServerParameters(**bridge))
    else:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=180)
        client = Client(streamable_http_client(f"{url}/mcp", http_client=http), mode=mode)

    async def main():
        async with client as session:
            return await _sweep_session(session, lambda s: _tools(s.list_tools()),
                                        lambda s, name, arguments: s.call_tool(name, arguments), calls)
    return anyio.run(main)


async def _tools(listing):
    return (await listing).tools


def run_fastmcp(mode: str, url: str, key: str, calls: list[dict]) -> tuple[list[str], list[dict]]:
    """``fastmcp``'s ``Client`` over Streamable HTTP (``http``) or stdio, errors as results."""
    from fastmcp import Client as FastClient
    from fastmcp.client.transports import StdioTransport, StreamableHttpTransport

    if mode == "stdio":
        transport = StdioTransport(**bridge_command(url, key))
    else:
        transport = StreamableHttpTransport(f"{url}/mcp", headers={"Authorization": f"Bearer {key}"})

    async def main():
        async with FastClient(transport, timeout=180) as session:
            return await _sweep_session(
                session, lambda s: s.list_tools(),
                lambda s, name, arguments: s.call_tool(name, arguments, raise_on_error=False), calls)
    return anyio.run(main)


# --- clients in a throwaway virtualenv ---------------------------------------------------------

def other_clients_python() -> Path:
    """The interpreter of ``var/mcp-sweep-venv``, (re)built when ``mcp_sweep_clients.txt`` changed."""
    python = OTHER_CLIENTS_VENV / "bin" / "python"
    wanted = hashlib.sha256(OTHER_CLIENTS_REQUIREMENTS.read_bytes()).hexdigest()
    marker = OTHER_CLIENTS_VENV / "requirements.sha256"
    if python.exists() and marker.exists() and marker.read_text() == wanted:
        return python
    shutil.rmtree(OTHER_CLIENTS_VENV, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(OTHER_CLIENTS_VENV)], check=True, timeout=300)
    done = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r",
                           str(OTHER_CLIENTS_REQUIREMENTS)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"pip install of {OTHER_CLIENTS_REQUIREMENTS.name} failed:\n{done.stderr[-2000:]}"
    marker.write_text(wanted)
    return python


def run_other_client(client: str, mode: str, url: str, key: str, calls: list[dict]) -> tuple[list[str], list[dict]]:
    """``mcp1`` or ``langchain`` over ``http`` or ``stdio``, in the throwaway virtualenv."""
    job = {"url": url, "key": key, "stdio": bridge_command(url, key),
           "calls": [{"tool": call["tool"], "arguments": call["arguments"]} for call in calls]}
    done = subprocess.run([str(other_clients_python()), str(HERE / "mcp_sweep_clients.py"), client, mode],
                          input=json.dumps(job), capture_output=True, text=True, timeout=900, cwd="/")
    assert done.returncode == 0, f"{client} over {mode} failed to run:\n{done.stderr[-3000:]}"
    answer = json.loads(done.stdout)
    return answer["tools"], answer["outcomes"]
