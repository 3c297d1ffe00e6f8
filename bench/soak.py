#!/usr/bin/env python
"""The soak: hostile and well-formed traffic and failing parts against the whole service, on
loopback only, bounded in time.

    python bench/soak.py [--quick] [--bodies N] [--load-seconds S] [--out DIR]
    python -m bench soak [same options]

It starts its own PostgreSQL (embedded, a temporary data directory and socket), its own
``redis-server`` on a free 127.0.0.1 port, gunicorn (2 sync workers) and one Celery worker on
them, prepares quickstart's ``demo`` workspace and a second one, and then, in order:

1. ``transport``: the transport cases of issue #20's table, each against the answer it must get;
2. ``bodies``: ``--bodies`` Hypothesis-generated bodies for every POST route, four in five hostile;
3. ``schemathesis``: ``bench.schema_fuzz.fuzz_live`` over the live ``/api/schema/``, every
   operation, positive and negative cases, with the checks of the CI test;
4. ``load``: 16 writers and 8 readers for ``--load-seconds`` while the Celery worker is SIGKILLed
   and restarted, the database stopped for ``--database-down-seconds`` and started, and Redis
   restarted; then every acknowledged record must be stored and ready, its dedupe key stored once,
   each writer's keyed fact current.

It prints requests by phase, status and error code, every 5xx with its input, the peak resident
memory of every process, and writes ``soak.json`` and ``soak.md`` (``--quick``: ``soak_quick.*``).
**Target: no answer of 500 or more except the 503s of the database-down window; nothing
acknowledged lost; every gunicorn and Celery process under ``--rss-ceiling-mib``.**
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import harness  # noqa: E402
from bench.harness import log  # noqa: E402

# Resident memory no gunicorn or Celery process may exceed during the soak (MiB): the bundled
# model and torch take most of it; a body that makes work grow without bound crosses it.
RSS_CEILING_MIB = 1024
FULL = {"bodies": 10_000, "load_seconds": 60, "schemathesis_examples": 20, "drain_timeout_s": 300}
QUICK = {"bodies": 300, "load_seconds": 20, "schemathesis_examples": 2, "drain_timeout_s": 120}


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="CI size: 300 bodies, "
                                                             "20 s of load, 2 schemathesis examples")
    parser.add_argument("--bodies", type=int, help="generated bodies (default 10,000; --quick 300)")
    parser.add_argument("--load-seconds", type=float, help="seconds of writers and readers (default 60; --quick 20)")
    parser.add_argument("--schemathesis-examples", type=int, help="examples per operation (default 20; --quick 2)")
    parser.add_argument("--drain-timeout", type=float, dest="drain_timeout_s",
                        help="seconds to wait for the acknowledged records to be ready (default 300; --quick 120)")
    parser.add_argument("--writers", type=int, default=16)
    parser.add_argument("--readers", type=int, default=8)
    parser.add_argument("--database-down-seconds", type=float, default=5)
    parser.add_argument("--clients", type=int, default=4, help="client threads sending the generated bodies")
    parser.add_argument("--rss-ceiling-mib", type=float, default=RSS_CEILING_MIB)
    harness.add_seed_argument(parser, 20)
    parser.add_argument("--skip", default="", help="comma-separated phases to leave out: "
                                                   "transport,bodies,schemathesis,load")
    harness.add_out_argument(parser)
    args = parser.parse_args(argv)
    for name, value in (QUICK if args.quick else FULL).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    args.skip = {phase for phase in args.skip.split(",") if phase}
    return args


def run(args) -> dict:
    from bench.soak_client import Tally
    from bench.soak_fuzz import fuzz_context, run_fuzz
    from bench.soak_load import check_writes, run_load, tally_load
    from bench.soak_stack import SoakStack
    from bench.soak_transport import run_transport

    started = time.monotonic()
    events, phases, tally = [], {}, Tally()
    load_at_start = os.getloadavg()

    def event(name: str) -> None:
        events.append({"event": name, "at_s": round(time.monotonic() - started, 1)})
        log(f"[soak {events[-1]['at_s']:7.1f} s] {name}")

    stack = SoakStack()
    try:
        event(f"stack up: gunicorn on 127.0.0.1:{stack.port}, Redis on {stack.redis.port}, PostgreSQL at "
              f"{stack.postgres.socket_dir}")
        demo, other = stack.keys["demo"], stack.keys["soak-other"]
        context = fuzz_context(stack.port, demo)
        if "transport" not in args.skip:
            phases["transport"] = run_transport(stack.port, (demo, other), context.record_ids[0], tally)
            event(f"transport: {sum(row['met'] for row in phases['transport'])} "
                  f"of {len(phases['transport'])} as expected")
        if "bodies" not in args.skip:
            begun = time.monotonic()
            sent = run_fuzz(stack.port, demo, context, count=args.bodies, seed=args.seed, tally=tally,
                            clients=args.clients)
            phases["bodies"] = {"sent": sent, "seconds": round(time.monotonic() - begun, 1)}
            event(f"bodies: {sent} generated bodies sent")
        if "schemathesis" not in args.skip:
            begun = time.monotonic()
            phases["schemathesis"] = schemathesis_phase(stack.port, demo, examples=args.schemathesis_examples,
                                                        seed=args.seed, tally=tally)
            phases["schemathesis"]["seconds"] = round(time.monotonic() - begun, 1)
            event(f"schemathesis: {phases['schemathesis']['requests']} requests")
        if "load" not in args.skip:
            load_events: list = []
            load_began = time.monotonic()
            load_log, window = run_load(stack, demo, seconds=args.load_seconds, writers=args.writers,
                                        readers=args.readers, database_down_s=args.database_down_seconds,
                                        events=load_events)
            tally_load(load_log, window, tally)
            writes = check_writes(stack.postgres.url, stack.port, demo, load_log, drain_timeout_s=args.drain_timeout_s,
                                  events=load_events, started=load_began)
            phases["load"] = {"events": load_events, "writes": writes,
                              "database_down_window_s": round(window[1] - window[0], 1)}
            event(f"load: {writes['acknowledged']} acknowledged records, {writes['lost']} lost, "
                  f"{writes['not_ready']} not ready")
    finally:
        memory = stack.memory.stop()
        memory_series = stack.memory.series
        stack.close()
    event("stack stopped")
    return {"settings": {key: (sorted(value) if isinstance(value, set) else str(value) if isinstance(value, Path)
                               else value) for key, value in vars(args).items()},
            "load_average": {"start": [round(x, 2) for x in load_at_start],
                             "end": [round(x, 2) for x in os.getloadavg()]},
            "seconds": round(time.monotonic() - started, 1), "events": events, "phases": phases,
            "counts": tally.rows(), "routes": tally.route_rows(),
            "server_errors": tally.server_errors, "no_answer": tally.no_answer,
            "not_envelope": tally.not_envelope,
            "memory": memory, "memory_series": memory_series}


def schemathesis_phase(port: int, key: str, *, examples: int, seed: int, tally) -> dict:
    """``fuzz_live`` over every operation; each response is tallied in phase ``schemathesis``.
    Returns the operations, requests, the positive cases set aside and the failed checks."""
    from bench.schema_fuzz import _django_ready, fuzz_live
    from bench.soak_client import Answer

    def observe(case, response) -> None:
        answer = Answer(response.status_code, {}, response.content, 0.0, response.elapsed)
        body = response.request.body or b""
        tally.add("schemathesis", answer, {"route": case.operation.label, "path": response.request.path_url[:2000],
                                           "body": (body.decode("utf-8", "replace") if isinstance(body, bytes)
                                                    else str(body))[:2000]})

    _django_ready()  # the checks read the project's own rules
    report = fuzz_live(f"http://127.0.0.1:{port}", key, examples=examples, seed=seed, observe=observe)
    return {"operations": report.operations, "operations_with_cases": len(report.cases_by_operation),
            "requests": report.cases, "without_cases": report.without_cases, "set_aside": dict(report.set_aside),
            "failures": len(report.failures), "failure_summary": report.failure_summary()}


def main(argv=None) -> int:
    from bench.soak_report import environment, markdown, verdict, write

    args = parse_args(argv)
    result = {"environment": environment(), **run(args)}
    result["verdict"] = verdict(result, args.rss_ceiling_mib)
    report = markdown(result)
    print(report)
    write(result, report, args.out, "soak_quick" if args.quick else "soak")
    return 0 if result["verdict"]["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
