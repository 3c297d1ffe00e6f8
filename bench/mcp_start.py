"""The stdio bridge's start as an agent host sees it: from spawning ``manage.py mcp`` to the
answer to ``initialize``, then its first ``tools/list`` (after ``notifications/initialized``),
beside same-run baselines: an ``initialize`` posted to ``/mcp`` over HTTP (the server's own
share), a bare interpreter importing the MCP SDK's server (the floor the bridge cannot go under)
and one setting Django up (what the bridge paid before it ran ahead of Django). Used by
``bench/mcp.py``."""
from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

from bench.search_setup import latency_summary

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 2.0
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
BASELINES = {
    "sdk_import": "import mcp.server.lowlevel.server, mcp.server.stdio",
    "django_setup": "import os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'memseek_site.settings'); "
                    "import django; django.setup()",
}


def _answer(bridge: subprocess.Popen, message: dict, timeout_s: float) -> dict:
    bridge.stdin.write((json.dumps(message) + "\n").encode())
    bridge.stdin.flush()
    ready, _, _ = select.select([bridge.stdout], [], [], timeout_s)
    if not ready:
        raise TimeoutError(f"no answer to {message['method']} within {timeout_s} s")
    answer = json.loads(bridge.stdout.readline())
    assert answer.get("id") == message["id"] and "result" in answer, answer
    return answer


def initialize_seconds(url: str, key: str, timeout_s: float = 120.0) -> tuple[float, float]:
    """Seconds from spawning the bridge to its ``initialize`` result on stdout, and from there
    to the answer of its first ``tools/list`` (which must list tools)."""
    env = {"MEMSEEK_URL": url, "MEMSEEK_API_KEY": key, "PATH": os.environ.get("PATH", "")}
    started = time.perf_counter()
    bridge = subprocess.Popen([sys.executable, str(ROOT / "manage.py"), "mcp"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd="/")
    try:
        _answer(bridge, INITIALIZE, timeout_s)
        initialized = time.perf_counter()
        bridge.stdin.write((json.dumps(INITIALIZED) + "\n").encode())
        listed = _answer(bridge, TOOLS_LIST, timeout_s)
        assert listed["result"]["tools"], listed
        return initialized - started, time.perf_counter() - initialized
    finally:
        bridge.kill()
        bridge.wait()


def http_initialize_seconds(url: str, key: str) -> float:
    """Seconds for one ``initialize`` posted to ``/mcp`` (the same message, on a new connection)."""
    import httpx

    started = time.perf_counter()
    answer = httpx.post(f"{url}/mcp", json=INITIALIZE, timeout=120, headers={
        "Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"})
    elapsed = time.perf_counter() - started
    assert answer.status_code == 200 and "result" in answer.json(), answer.text[:300]
    return elapsed


def baseline_seconds(code: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return time.perf_counter() - started


def measure(url: str, key: str, starts: int) -> dict:
    """``starts`` bridge starts and as many of each baseline, interleaved (one warm-up each)."""
    timings: dict[str, list[float]] = {name: [] for name in ("bridge_initialize", "bridge_tools_list",
                                                              "http_initialize", *BASELINES)}
    load_before = os.getloadavg()
    for index in range(-1, starts):
        initialize, tools_list = initialize_seconds(url, key)
        seconds = {"bridge_initialize": initialize, "bridge_tools_list": tools_list,
                   "http_initialize": http_initialize_seconds(url, key),
                   **{name: baseline_seconds(code) for name, code in BASELINES.items()}}
        if index >= 0:
            for name, value in seconds.items():
                timings[name].append(value)
    results = {name: latency_summary(values) for name, values in timings.items()}
    bridge_p50 = results["bridge_initialize"]["p50_ms"]
    for name in ("http_initialize", *BASELINES):
        results[f"ratio_p50_to_{name}"] = bridge_p50 / results[name]["p50_ms"]
    results["load_average"] = {"start": list(load_before), "end": list(os.getloadavg())}
    results["target"] = {"initialize_p50_s_max": TARGET_S, "met": bridge_p50 / 1000 <= TARGET_S}
    return results


def markdown(results: dict) -> list[str]:
    load = results["load_average"]
    lines = ["", "## stdio bridge start", "",
             "Spawning `manage.py mcp` until its `initialize` answer, then its first `tools/list`, beside an "
             "`initialize` posted to `/mcp`, a bare interpreter importing the MCP SDK's server and one setting "
             "Django up, interleaved.", "",
             "| step | p50 ms | p95 ms | mean ms | bridge start ÷ this (p50) |", "| --- | ---: | ---: | ---: | ---: |"]
    labels = {"bridge_initialize": "bridge: spawn → `initialize` answer",
              "bridge_tools_list": "bridge: then `tools/list` answer", "http_initialize": "HTTP: `initialize` on /mcp",
              "sdk_import": "import the MCP SDK server", "django_setup": "`django.setup()`"}
    for name, label in labels.items():
        s = results[name]
        ratio = ("1.00" if name == "bridge_initialize" else "" if name == "bridge_tools_list"
                 else f"{results[f'ratio_p50_to_{name}']:.2f}")
        lines.append(f"| {label} | {s['p50_ms']:.0f} | {s['p95_ms']:.0f} | {s['mean_ms']:.0f} | {ratio} |")
    target = results["target"]
    lines += ["", f"Load average at the start {', '.join(f'{x:.1f}' for x in load['start'])}, at the end "
              f"{', '.join(f'{x:.1f}' for x in load['end'])}. Target: `initialize` p50 under "
              f"{target['initialize_p50_s_max']:.0f} s on an idle machine: {'met' if target['met'] else 'not met'}."]
    return lines
