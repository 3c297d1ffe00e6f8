#!/usr/bin/env python
"""MCP tool-call latency beside the same REST call, both measured in the same run.

    python bench/mcp.py [--iterations 5] [--out DIR] [--database NAME] [--drop]
    python -m bench mcp [same options]

The database (``--database``, default ``memseek_bench_mcp``) is prepared as ``manage.py
quickstart --no-serve`` prepares one: the example catalog (with its ``mcp/agent.yaml``) and the
sample records. One gunicorn sync worker serves it on 127.0.0.1, so every call lands in the same
process and shares its query-embedding cache; a warm-up pass sends every query once, so every
timed call finds its query vector cached and no figure includes a model call.

For each query (a sample record's text as the task, its entity as the entity) three calls of
the ``customer_context`` view (``customer_context@1``, hybrid, k=20), in an order rotated from
query to query, on a new connection each (gunicorn's sync workers close every connection):

* ``rest``: ``POST /views/customer_context/query`` with httpx (the baseline);
* ``mcp_sdk``: ``tools/call`` of the ``customer_context`` tool through the official MCP SDK's
  client over Streamable HTTP at revision 2026-07-28 (one stateless POST per call);
* ``mcp_http``: the same JSON-RPC message posted with httpx (the protocol without the client).

Every MCP answer is checked to carry the REST answer's hits. Then ``--starts`` starts of the
stdio bridge against the same server (``bench/mcp_start.py``: spawn to ``initialize`` answer,
then the first ``tools/list``, beside an ``initialize`` posted to ``/mcp``, importing the SDK and
setting Django up). Writes ``mcp.json`` and ``mcp.md`` to ``--out``
(default bench/results). Targets: ``mcp_sdk`` p50 at most 1.2 times ``rest`` p50; the bridge's
``initialize`` p50 under 2 s on an idle machine.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Run as a script, this file's folder leads sys.path, where ``mcp`` names this file, not the SDK.
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != ROOT / "bench"]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import mcp_start  # noqa: E402
from bench import harness  # noqa: E402
from bench.search_setup import django_setup, latency_summary, log  # noqa: E402

TARGET_RATIO = 1.2
REVISION = "2026-07-28"
VIEW = "customer_context"
CALLS = ("rest", "mcp_sdk", "mcp_http")


def queries() -> list[dict]:
    samples = json.loads((ROOT / "fixtures" / "samples" / "quickstart_records.json").read_text())["records"]
    return [{"entity": record["entity"], "task": record["text"]} for record in samples if record.get("text")]


def prepare() -> str:
    """Quickstart's data in the current database; returns a fresh key of its workspace."""
    import re

    from django.core.management import call_command

    out = io.StringIO()
    call_command("quickstart", "--no-serve", stdout=out)
    return re.search(r"API key \(shown once\):\s+(\S+)", out.getvalue()).group(1)


def rpc_message(arguments: dict, index: int) -> dict:
    return {"jsonrpc": "2.0", "id": index, "method": "tools/call", "params": {
        "name": VIEW, "arguments": arguments, "_meta": {
            "io.modelcontextprotocol/protocolVersion": REVISION, "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"}}}}


async def measure(url: str, key: str, items: list[dict], iterations: int) -> dict[str, list[float]]:
    import httpx
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    auth = {"Authorization": f"Bearer {key}"}
    mcp_headers = {**auth, "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": REVISION,
                   "Mcp-Method": "tools/call", "Mcp-Name": VIEW}
    timings: dict[str, list[float]] = {name: [] for name in CALLS}
    sdk_http = httpx2.AsyncClient(headers=auth, timeout=300)
    async with httpx.AsyncClient(base_url=url, timeout=300) as plain, \
            Client(streamable_http_client(f"{url}/mcp", http_client=sdk_http), mode=REVISION) as session:
        await session.list_tools()

        async def call(name: str, arguments: dict, index: int) -> list[str]:
            started = time.perf_counter()
            if name == "rest":
                response = await plain.post(f"/views/{VIEW}/query", json=arguments, headers=auth)
                payload = response.json()
            elif name == "mcp_sdk":
                result = await session.call_tool(VIEW, arguments)
                assert not result.is_error, result.content
                payload = result.structured_content
            else:
                response = await plain.post("/mcp", json=rpc_message(arguments, index), headers=mcp_headers)
                payload = response.json()["result"]["structuredContent"]
            elapsed = time.perf_counter() - started
            if index >= 0:
                timings[name].append(elapsed)
            return [hit["id"] for hit in payload["hits"]]

        for item in items:  # warm-up: every query vector cached, every code path loaded
            for name in CALLS:
                await call(name, item, -1)
        for iteration in range(iterations):
            for index, item in enumerate(items):
                shift = (iteration + index) % len(CALLS)
                order = CALLS[shift:] + CALLS[:shift]
                hits = {name: await call(name, item, index) for name in order}
                assert hits["mcp_sdk"] == hits["rest"] == hits["mcp_http"], (item, hits)
    return timings


def run(args) -> dict:
    import anyio
    from django.db import connections

    from bench.processes import Server, database_url
    from bench.search_setup import bench_database, environment, use_bench_database

    with bench_database(args.database, drop=args.drop, cache=args.out):
        settings_dict = use_bench_database(args.database)
        key = prepare()
        env = {"DATABASE_URL": database_url(settings_dict), "OMP_NUM_THREADS": "1", "CELERY_BROKER_URL": "",
               "TOUCH_ON_READ": "false"}
        items = queries()[:args.queries]
        server = Server(workers=1, env=env)
        load_before = os.getloadavg()
        try:
            log(f"timing {args.iterations} x {len(items)} view calls per kind on 127.0.0.1:{server.port}")
            timings = anyio.run(measure, f"http://127.0.0.1:{server.port}", key, items, args.iterations)
            log(f"timing {args.starts} stdio bridge starts")
            stdio_start = mcp_start.measure(f"http://127.0.0.1:{server.port}", key, args.starts)
        finally:
            server.stop()
        results = {"environment": environment(), "config": {
            "iterations": args.iterations, "queries": len(items), "view": f"{VIEW}@1", "revision": REVISION,
            "gunicorn_workers": 1, "touch_on_read": False},
            "load_average": {"start": list(load_before), "end": list(os.getloadavg())}}
        connections["default"].close()
    for name in CALLS:
        results[name] = latency_summary(timings[name])
    for name in ("mcp_sdk", "mcp_http"):
        for q in ("p50", "p95"):
            results[f"ratio_{q}_{name}"] = results[name][f"{q}_ms"] / results["rest"][f"{q}_ms"]
    results["target"] = {"ratio_p50_mcp_sdk_max": TARGET_RATIO,
                         "met": results["ratio_p50_mcp_sdk"] <= TARGET_RATIO}
    results["stdio_start"] = stdio_start
    return results


def markdown_report(results: dict) -> str:
    config = results["config"]
    lines = [
        "# MCP tool call beside the REST call", "",
        f"`{config['view']}` (hybrid, k=20) called {config['iterations']} x {config['queries']} times per kind on one "
        f"gunicorn sync worker, query vectors cached, touch-on-read off, protocol revision {config['revision']}.",
        "", "| call | p50 ms | p95 ms | p99 ms | mean ms | ÷ rest (p50) | ÷ rest (p95) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    labels = {"rest": "REST `POST /views/customer_context/query` (httpx)",
              "mcp_sdk": "MCP `tools/call`, official SDK client", "mcp_http": "MCP `tools/call`, JSON-RPC via httpx"}
    for name in CALLS:
        s = results[name]
        ratios = ("1.00 | 1.00" if name == "rest"
                  else f"{results[f'ratio_p50_{name}']:.2f} | {results[f'ratio_p95_{name}']:.2f}")
        lines.append(f"| {labels[name]} | {s['p50_ms']:.1f} | {s['p95_ms']:.1f} | {s['p99_ms']:.1f} | "
                     f"{s['mean_ms']:.1f} | {ratios} |")
    load = results["load_average"]
    lines += ["", f"Load average (1, 5, 15 min) at the start "
                  f"{', '.join(f'{x:.1f}' for x in load['start'])}, at the end "
              f"{', '.join(f'{x:.1f}' for x in load['end'])} ({results['environment']['machine']['cores']} cores)."]
    target = results["target"]
    lines += ["", f"Target: SDK tool call p50 at most {target['ratio_p50_mcp_sdk_max']}x the REST p50: "
              f"{'met' if target['met'] else 'not met'} ({results['ratio_p50_mcp_sdk']:.2f}x)."]
    lines += mcp_start.markdown(results["stdio_start"]) + [""]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=5, help="timed passes over the queries (default 5)")
    parser.add_argument("--queries", type=int, default=100, help="at most this many queries (default: all samples)")
    harness.add_out_argument(parser)
    harness.add_database_arguments(parser, database="memseek_bench_mcp")
    parser.add_argument("--starts", type=int, default=10, help="timed stdio bridge starts (default 10)")
    args = parser.parse_args(argv)
    django_setup()
    results = run(args)
    harness.publish(results, out=args.out, name="mcp", report=markdown_report)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memseek_site.settings")
    sys.exit(main())
