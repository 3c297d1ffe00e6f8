#!/usr/bin/env python
"""Latency of the ``GET /memory/*`` lookups, each beside the raw SQL it ran, from the same run.

    python bench/lookups.py [--size 100000] [--queries 40] [--out DIR] [--drop] ...
    python -m bench lookups [same options]

1. The corpus: ``bench/corpus.py``'s records (events and restated keyed facts about contacts)
   written by ``record_ingest_batch`` into ``bench/catalogs/lookups`` (no processors, so every
   record is ready at write), in its own database ``<prefix>_<size>``, reused while it holds
   the expected rows.
2. For each lookup, ``--queries`` requests sampled from the corpus (seeded): the server-side
   latency of the route's parse and service call for a query string, in this process (no
   HTTP), after one warm-up pass.
3. The baseline: the SQL statements that same call issued (captured from the service's own
   connection: statement text and parameters), replayed with plain psycopg (client-side
   binding like Django's, autocommit), timed interleaved with the service call. The ratio
   says what the service adds to its own SQL.

Writes ``lookups.json`` and ``lookups.md`` to ``--out`` (default bench/results). Target: every
lookup p50 ≤ 10 ms at 100,000 records.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memseek_site.settings")

from bench import harness  # noqa: E402
from bench import search_setup as setup  # noqa: E402
from bench.search_setup import latency_summary, log, progress  # noqa: E402

CATALOG = ROOT / "bench" / "catalogs" / "lookups"
TARGET_P50_MS = 10.0
SEED = 17


def build(size: int, database: str) -> dict:
    """Switch to ``database`` and make sure it holds the corpus of ``size`` records."""
    from bench.corpus import batches, make_records
    from catalog_app.models import Record, Workspace
    from catalog_app.services.catalog_load import catalog_load
    from catalog_app.services.record_ingest import record_ingest_batch
    from catalog_app.services.workspaces import workspace_create

    setup.use_bench_database(database)
    name = f"bench-lookups-{size}"
    workspace = Workspace.objects.filter(name=name).first()
    if workspace is not None and Record.objects.filter(workspace=workspace).count() == size:
        log(f"reusing workspace {name} in database {database}")
        return {"workspace": workspace, "reused": True, "seconds": 0.0}
    Workspace.objects.filter(name=name).delete()
    started = time.perf_counter()
    workspace, _ = workspace_create(name=name)
    catalog_load(workspace=workspace, directory=CATALOG)
    workspace.refresh_from_db()
    items = make_records(size, SEED)
    bar = progress(total=size, desc=f"ingest {size} records", unit="rec")
    for batch in batches(items, 100):
        record_ingest_batch(workspace=workspace, items=batch)
        bar.update(len(batch))
    bar.close()
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE) catalog_app_record")
    return {"workspace": workspace, "reused": False, "seconds": time.perf_counter() - started}


def sample_requests(workspace, n: int) -> dict[str, list[dict]]:
    """``{lookup: [query params, ...]}``, ``n`` each, drawn from the stored passages."""
    from django.db import connection

    from retrieval_app.memory.addresses import escape_segment

    rng = random.Random(SEED)
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, entity, key, text, occurred_at FROM catalog_app_record WHERE workspace_id = %s "
                       "ORDER BY random() LIMIT %s", [workspace.pk, 20 * n])
        rows = cursor.fetchall()
    events = [row for row in rows if row[2] is None][:n]
    facts = [row for row in rows if row[2] is not None][:n]

    def passage(row):
        return f"passages/main/{escape_segment(row[1])}/{row[0]}"

    def phrase(text: str) -> str:
        words = text.split()
        start = rng.randrange(max(1, len(words) - 3))
        return " ".join(words[start:start + 3]).strip(".,;:!?\"'()")

    return {
        "grep (workspace)": [{"q": phrase(row[3])} for row in events],
        "grep (one entity)": [{"q": phrase(row[3]), "path": f"passages/main/{escape_segment(row[1])}"}
                              for row in events],
        "latest (workspace)": [{} for _ in events],
        "latest (one entity)": [{"entity": row[1]} for row in events],
        "latest (one day)": [{"after": row[4].date().isoformat(), "before": row[4].date().isoformat()}
                             for row in events],
        "around (5 + 5)": [{"path": passage(row)} for row in events],
        "read (passage)": [{"path": passage(row)} for row in events],
        "read (fact)": [{"path": f"facts/main/{escape_segment(row[1])}/{escape_segment(row[2])}"} for row in facts],
        "ls (root)": [{} for _ in events],
        "ls (entities)": [{"path": "passages/main"} for _ in events],
        "ls (one entity's passages)": [{"path": f"passages/main/{escape_segment(row[1])}"} for row in events],
        "ls (one entity's facts)": [{"path": f"facts/main/{escape_segment(row[1])}"} for row in facts],
        "history": [{"path": f"facts/main/{escape_segment(row[1])}/{escape_segment(row[2])}"} for row in facts],
    }


def service_call(workspace, lookup: str, params: dict):
    from django.http import QueryDict

    from retrieval_app.memory import params as parse
    from retrieval_app.memory.listing import memory_ls
    from retrieval_app.memory.lookups import memory_around, memory_grep, memory_latest
    from retrieval_app.memory.reads import memory_history, memory_read

    query = QueryDict(urlencode(params))
    route = lookup.split(" ")[0]
    if route == "grep":
        return memory_grep(workspace=workspace, request=parse.grep_request(query))
    if route == "latest":
        return memory_latest(workspace=workspace, request=parse.latest_request(query))
    if route == "around":
        return memory_around(workspace=workspace, request=parse.around_request(query))
    if route == "read":
        return memory_read(workspace=workspace, path=parse.read_request(query))
    if route == "ls":
        return memory_ls(workspace=workspace, request=parse.ls_request(query))
    return memory_history(workspace=workspace, request=parse.history_request(query))


def captured(call) -> list[tuple[str, list]]:
    """The SQL statements (text, parameters) ``call()`` issued on Django's connection."""
    from django.db import connection

    statements = []

    def record(execute, sql, params, many, context):
        statements.append((sql, list(params or [])))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        call()
    return statements


def run(workspace, requests: dict[str, list[dict]]) -> list[dict]:
    import psycopg

    raw = setup.raw_connection()
    results = []
    for lookup, cases in requests.items():
        for params in cases:  # warm-up: caches, the catalog, the plans
            service_call(workspace, lookup, params)
        service, baseline = [], []
        for index, params in enumerate(cases):
            statements = captured(lambda: service_call(workspace, lookup, params))

            def replay():
                with psycopg.ClientCursor(raw) as cursor:
                    for sql, values in statements:
                        cursor.execute(sql, values)
                        cursor.fetchall()

            pair = [("service", lambda: service_call(workspace, lookup, params)), ("baseline", replay)]
            for name, call in harness.in_turn(pair, index):
                started = time.perf_counter()
                call()
                (service if name == "service" else baseline).append(time.perf_counter() - started)
        service_ms, baseline_ms = latency_summary(service), latency_summary(baseline)
        results.append({"lookup": lookup, "queries": len(cases), "service": service_ms, "baseline": baseline_ms,
                        "ratio_p50": service_ms["p50_ms"] / baseline_ms["p50_ms"],
                        "meets_target": service_ms["p50_ms"] <= TARGET_P50_MS})
        log(f"{lookup}: p50 {service_ms['p50_ms']:.2f} ms (raw SQL {baseline_ms['p50_ms']:.2f} ms)")
    raw.close()
    return results


def markdown(payload: dict) -> str:
    lines = [f"# Memory lookups at {payload['size']:,} records", "",
             f"Service = the route's parse + lookup in process (no HTTP); raw SQL = the same statements replayed "
             f"with psycopg. {payload['queries']} sampled requests per lookup. Target: p50 ≤ {TARGET_P50_MS:g} ms.", "",
             "| Lookup | p50 ms | p95 ms | raw SQL p50 ms | raw SQL p95 ms | ratio p50 | p50 ≤ 10 ms |",
             "|---|---|---|---|---|---|---|"]
    for row in payload["lookups"]:
        s, b = row["service"], row["baseline"]
        lines.append(f"| {row['lookup']} | {s['p50_ms']:.2f} | {s['p95_ms']:.2f} | {b['p50_ms']:.2f} | "
                     f"{b['p95_ms']:.2f} | {row['ratio_p50']:.2f} | {'yes' if row['meets_target'] else 'no'} |")
    env = payload["environment"]
    machine = env["machine"]
    lines += ["", f"- Machine: {machine['cores']} cores, load at start {machine['load_average_at_start']}",
              f"- Commit: {env['git']['commit'][:12]}", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=40)
    harness.add_database_arguments(parser, prefix="memseek_bench_lookups")
    harness.add_out_argument(parser)
    args = parser.parse_args(argv)
    setup.django_setup()
    from memseek_site.conf import memseek_setting

    database = f"{args.database_prefix}_{args.size}"
    with setup.bench_database(database, drop=args.drop, cache=setup.CACHE):
        corpus = build(args.size, database)
        requests = sample_requests(corpus["workspace"], args.queries)
        lookups = run(corpus["workspace"], requests)
        payload = {"size": args.size, "queries": args.queries, "build_seconds": corpus["seconds"],
                   "reused": corpus["reused"], "lookups": lookups, "environment": setup.environment(),
                   "settings": {name: memseek_setting(name) for name in (
                       "MEMORY_PAGE_LIMIT", "MEMORY_GREP_CANDIDATES", "MEMORY_AROUND_MAX")}}
    harness.publish(payload, out=args.out, name="lookups", report=markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
