#!/usr/bin/env python
"""Bounded work for any question: per route, the hostile table's worst time beside the same
route's ordinary question, both measured in the same run against gunicorn.

    python bench/hostile.py [--ordinary 5] [--texts N] [--out DIR] [--database NAME] [--drop]
    python -m bench hostile [same options]

The database (``--database``, default ``memseek_bench_hostile``) is prepared as ``manage.py
quickstart --no-serve`` prepares one: the example catalog (with its MCP declaration) and the
sample records. One gunicorn sync worker serves it on 127.0.0.1 with the default deadlines.

For every route and MCP tool of ``bench/hostile_texts.py`` that takes text: the ordinary
question ``--ordinary`` times (after one warm-up call, so a cached query vector is the ordinary
case) and its p50 (the baseline), then every hostile text once (its first ``--texts``: the
smoke test's subset), each answer checked against the table's rule (a JSON envelope, 2xx, 4xx
or ``503 deadline_exceeded``). Target per route: the worst hostile time at most the smaller of
5x the ordinary p50 and the route's deadline. Writes ``hostile.json`` and ``hostile.md`` to
``--out`` (default bench/results).
"""
from __future__ import annotations

import argparse
import io
import os
import re
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import harness  # noqa: E402
from bench.hostile_texts import HOSTILE, MCP_TOOLS, ORDINARY, ROUTES, acceptable, mcp_call  # noqa: E402
from bench.search_setup import django_setup, log  # noqa: E402

TARGET_RATIO = 5.0


def _targets() -> dict[str, tuple[str, str, object, dict]]:
    """name -> (method, path, request builder, extra headers), the MCP tools as ``mcp:<tool>``."""
    targets = {name: (method, path, build, {}) for name, (method, path, build) in ROUTES.items()}
    for tool, arguments in MCP_TOOLS.items():
        targets[f"mcp:{tool}"] = ("POST", "/mcp", lambda text, tool=tool, arguments=arguments:
                                  mcp_call(tool, arguments(text))[0], mcp_call(tool, {})[1])
    return targets


def _timed(url: str, key: str, method: str, path: str, payload, headers: dict) -> tuple[float, str | None, int]:
    import httpx

    headers = {"Authorization": f"Bearer {key}", **headers}
    started = time.perf_counter()
    if method == "GET":
        response = httpx.get(f"{url}{path}?{urlencode(payload)}", headers=headers, timeout=600)
    else:
        response = httpx.post(f"{url}{path}", json=payload, headers=headers, timeout=600)
    elapsed = time.perf_counter() - started
    return elapsed, acceptable(response.status_code, response.headers.get("content-type", ""), response.content), \
        response.status_code


def measure(url: str, key: str, ordinary_runs: int, texts: dict[str, str]) -> dict:
    from memseek_site.deadline import class_deadline_ms, route_class

    results = {}
    for name, (method, path, build, headers) in _targets().items():
        url_name = {"/mcp": "mcp"}.get(path, "search" if method == "POST" else None)
        deadline_s = class_deadline_ms(route_class(url_name, method)) / 1000
        _timed(url, key, method, path, build(ORDINARY), headers)  # warm-up
        ordinary = [_timed(url, key, method, path, build(ORDINARY), headers) for _ in range(ordinary_runs)]
        hostile = {text_name: _timed(url, key, method, path, build(text), headers) for text_name, text in texts.items()}
        worst_name = max(hostile, key=lambda text_name: hostile[text_name][0])
        p50 = statistics.median(seconds for seconds, _, _ in ordinary)
        bound = min(TARGET_RATIO * p50, deadline_s)
        broken = {text_name: why for text_name, (_, why, _) in hostile.items() if why is not None}
        results[name] = {
            "ordinary_p50_ms": p50 * 1000, "worst_ms": hostile[worst_name][0] * 1000, "worst_text": worst_name,
            "ratio": hostile[worst_name][0] / p50, "deadline_ms": deadline_s * 1000, "target_ms": bound * 1000,
            "met": hostile[worst_name][0] <= bound and not broken, "broken": broken,
            "statuses": sorted({status for _, _, status in hostile.values()}),
            "ordinary_statuses": sorted({status for _, _, status in ordinary}),
            "hostile_ms": {text_name: seconds * 1000 for text_name, (seconds, _, _) in hostile.items()}}
        log(f"{name}: ordinary p50 {p50 * 1000:.1f} ms, worst {hostile[worst_name][0] * 1000:.1f} ms "
            f"({worst_name}), {hostile[worst_name][0] / p50:.1f}x")
    return results


def run(args) -> dict:
    from django.core.management import call_command
    from django.db import connections

    from bench.processes import Server, database_url
    from bench.search_setup import bench_database, environment, use_bench_database

    texts = dict(list(HOSTILE.items())[:args.texts] if args.texts else HOSTILE.items())
    with bench_database(args.database, drop=args.drop, cache=args.out):
        settings_dict = use_bench_database(args.database)
        out = io.StringIO()
        call_command("quickstart", "--no-serve", stdout=out)
        key = re.search(r"API key \(shown once\):\s+(\S+)", out.getvalue()).group(1)
        env = {"DATABASE_URL": database_url(settings_dict), "OMP_NUM_THREADS": "1", "CELERY_BROKER_URL": "",
               "TOUCH_ON_READ": "false"}
        server = Server(workers=1, env=env)
        load_before = os.getloadavg()
        try:
            routes = measure(f"http://127.0.0.1:{server.port}", key, args.ordinary, texts)
        finally:
            server.stop()
        results = {"environment": environment(),
                   "config": {"ordinary_runs": args.ordinary, "hostile_texts": list(texts), "gunicorn_workers": 1,
                              "target_ratio": TARGET_RATIO},
                   "load_average": {"start": list(load_before), "end": list(os.getloadavg())},
                   "routes": routes,
                   "target": {"met": all(route["met"] for route in routes.values()),
                              "missed": sorted(name for name, route in routes.items() if not route["met"])}}
        connections["default"].close()
    return results


def markdown_report(results: dict) -> str:
    config = results["config"]
    lines = ["# Hostile questions beside the ordinary question, per route", "",
             f"One gunicorn sync worker over quickstart's data; the ordinary question \"{ORDINARY}\" "
             f"{config['ordinary_runs']} times after a warm-up (p50 is the baseline), then each of "
             f"{len(config['hostile_texts'])} hostile texts once. Target: worst <= min({config['target_ratio']:g}x "
             "ordinary p50, the route's deadline), and every answer a JSON envelope (2xx, 4xx or the deadline's 503).",
             "",
             "| route | ordinary p50 ms | worst hostile ms | worst text | ÷ ordinary | target ms | statuses | met |",
             "| --- | ---: | ---: | --- | ---: | ---: | --- | --- |"]
    for name, route in results["routes"].items():
        lines.append(f"| {name} | {route['ordinary_p50_ms']:.1f} | {route['worst_ms']:.1f} | {route['worst_text']} | "
                     f"{route['ratio']:.2f} | {route['target_ms']:.0f} | {', '.join(map(str, route['statuses']))} | "
                     f"{'yes' if route['met'] else 'no'} |")
    load = results["load_average"]
    lines += ["", f"Load average (1, 5, 15 min) at the start {', '.join(f'{x:.1f}' for x in load['start'])}, at the "
              f"end {', '.join(f'{x:.1f}' for x in load['end'])} ({results['environment']['machine']['cores']} cores).",
              ""]
    missed = results["target"]["missed"]
    lines += [f"Target {'missed on: ' + ', '.join(missed) if missed else 'met on every route'}.", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ordinary", type=int, default=5, help="timed ordinary questions per route (default 5)")
    parser.add_argument("--texts", type=int, default=0, help="only the first N hostile texts (default: all)")
    harness.add_out_argument(parser)
    harness.add_database_arguments(parser, database="memseek_bench_hostile")
    args = parser.parse_args(argv)
    django_setup()
    results = run(args)
    harness.publish(results, out=args.out, name="hostile", report=markdown_report)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memseek_site.settings")
    sys.exit(main())
