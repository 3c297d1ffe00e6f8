#!/usr/bin/env python
"""Reads served by a streaming replica beside the same reads on the primary, the cost of the
read-your-writes check, and the replica's lag under ingest, from one run.

    python bench/replicas.py [--size 5000] [--queries 100] [--ingest-batches 20] [--readers 4] [--out DIR] [--drop]
    python -m bench replicas [same options]

1. The corpus: ``bench/corpus.py``'s records written by ``record_ingest_batch`` into
   ``bench/catalogs/lookups`` (no processors), in its own database ``<prefix>_<size>``.
2. A streaming replica of the whole server made with the embedded ``pg_basebackup -R``
   (``bench/streaming_replica.py``) on a free loopback port, and three gunicorn servers (one sync
   worker each, ``TOUCH_ON_READ=false`` so a read writes nothing, the same corpus):
   ``primary`` (no replica: every read on the primary), ``replica`` (``DATABASE_URL`` is the
   replica itself: reads on it with no routing and no check) and ``routed`` (the primary with
   ``DATABASE_REPLICA_URLS``: each read sends the consistency token of the last write, and the
   router checks the replica's state and replay position before serving the read there).
3. Latency: ``--queries`` ``POST /search/lexical`` queries and as many ``GET /records/{id}``,
   each sent to the three servers in rotating order (interleaved, so all three see the same
   machine state); ratios of p50s: replica / primary, and routed / replica (the check's cost;
   target <= 1.05). Every routed answer's ``Memseek-Served-By`` is counted.
4. Throughput: ``--readers`` client threads each sending ``--queries`` lexical searches to the
   primary, then to routed; requests per second of each, as a ratio.
5. Lag under ingest: ``--ingest-batches`` batches of 100 records through ``routed``'s
   ``POST /records`` (writes go to the primary) while ``--readers`` threads keep reading; for
   each batch, the time from its response to the replica having replayed its token, beside the
   batch's own write latency; how many reads the replica served meanwhile.

Writes ``replicas.json`` and ``replicas.md`` to ``--out`` (default bench/results).
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memseek_site.settings")

from bench import search_setup as setup  # noqa: E402
from bench.search_setup import latency_summary, log, progress  # noqa: E402

CATALOG = ROOT / "bench" / "catalogs" / "lookups"
SEED = 29
TARGET_CHECK_RATIO = 1.05
SERVED_BY = "Memseek-Served-By"
TOKEN = "Memseek-Consistency-Token"
CONFIGS = ("primary", "replica", "routed")


def build(size: int, database: str):
    """The corpus database (switched to, reused while it holds ``size`` records); a workspace
    and a key for it, and the record ids."""
    from bench.corpus import batches, make_records
    from catalog_app.models import ApiKey, Record, Workspace
    from catalog_app.services.catalog_load import catalog_load
    from catalog_app.services.record_ingest import record_ingest_batch
    from catalog_app.services.workspaces import api_key_create, workspace_create

    setup.use_bench_database(database)
    name = f"bench-replicas-{size}"
    workspace = Workspace.objects.filter(name=name).first()
    if workspace is None or Record.objects.filter(workspace=workspace).count() != size:
        Workspace.objects.filter(name=name).delete()
        workspace, _ = workspace_create(name=name)
        catalog_load(workspace=workspace, directory=CATALOG)
        workspace.refresh_from_db()
        items = make_records(size, SEED)
        bar = progress(total=size, desc=f"ingest {size} records", unit="rec")
        for batch in batches(items, 100):
            record_ingest_batch(workspace=workspace, items=batch)
            bar.update(len(batch))
        bar.close()
    ApiKey.objects.filter(workspace=workspace).delete()
    key = api_key_create(workspace=workspace)
    ids = [str(pk) for pk in Record.objects.filter(workspace=workspace).values_list("id", flat=True)]
    return workspace, key, ids


def call(port: int, method: str, path: str, key: str, payload=None, token: str | None = None):
    """``(status, headers, seconds)`` of one request on a new connection (sync workers close each)."""
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    if token is not None:
        headers[TOKEN] = token
    body = None if payload is None else json.dumps(payload).encode()
    started = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    try:
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        response.read()
        elapsed = time.perf_counter() - started
        if response.status >= 300:
            raise RuntimeError(f"{method} {path} on port {port}: {response.status}")
        return response.status, dict(response.getheaders()), elapsed
    finally:
        conn.close()


def lexical_body(text: str) -> dict:
    return {"contract_version": 1, "mode": "lexical", "scope": {}, "query": {"text": text, "limit": 10}}


def measure_latency(ports: dict, key: str, reads: list[tuple[str, str, dict | None]], token: str) -> dict:
    """Each read sent to the three servers in rotating order; ``{read kind: {config: summary}}``."""
    times = {kind: {config: [] for config in CONFIGS} for kind in {kind for kind, _, _ in reads}}
    served = {}
    for index, (kind, path, payload) in enumerate(progress(reads, desc="latency", unit="read")):
        order = CONFIGS[index % 3:] + CONFIGS[:index % 3]
        for config in order:
            method = "GET" if payload is None else "POST"
            _, headers, seconds = call(ports[config], method, path, key, payload,
                                       token if config == "routed" else None)
            times[kind][config].append(seconds)
            if config == "routed":
                served[headers.get(SERVED_BY)] = served.get(headers.get(SERVED_BY), 0) + 1
    result = {}
    for kind, by_config in times.items():
        summaries = {config: latency_summary(values) for config, values in by_config.items()}
        result[kind] = {**summaries,
                        "replica_over_primary": summaries["replica"]["p50_ms"] / summaries["primary"]["p50_ms"],
                        "check_ratio": summaries["routed"]["p50_ms"] / summaries["replica"]["p50_ms"]}
    return {"reads": result, "routed_served_by": served}


def _readers(port: int, key: str, bodies: list[dict], readers: int, token: str | None, stop=None) -> dict:
    """``readers`` threads sending ``bodies`` each (until ``stop`` is set, when given)."""
    served, lock, count = {}, threading.Lock(), [0]

    def reader(offset: int):
        for body in bodies[offset:] + bodies[:offset]:
            if stop is not None and stop.is_set():
                return
            _, headers, _ = call(port, "POST", "/search/lexical", key, body, token)
            with lock:
                count[0] += 1
                served[headers.get(SERVED_BY)] = served.get(headers.get(SERVED_BY), 0) + 1

    threads = [threading.Thread(target=reader, args=(i * len(bodies) // readers,)) for i in range(readers)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    return {"requests": count[0], "seconds": seconds, "per_second": count[0] / seconds, "served_by": served}


def measure_throughput(ports: dict, key: str, bodies: list[dict], readers: int, token: str) -> dict:
    primary = _readers(ports["primary"], key, bodies, readers, None)
    routed = _readers(ports["routed"], key, bodies, readers, token)
    return {"readers": readers, "primary": primary, "routed": routed,
            "routed_over_primary": routed["per_second"] / primary["per_second"]}


def measure_lag(port: int, key: str, replica, batches: list[list[dict]], bodies: list[dict], readers: int) -> dict:
    """Ingest ``batches`` through the routed server while readers read; per batch, the write's
    latency and the time until the replica replayed its token."""
    from memseek_site.replicas import lsn_parse

    stop = threading.Event()
    reading = {}
    reader_thread = threading.Thread(target=lambda: reading.update(
        _readers(port, key, bodies * 50, readers, None, stop)))
    reader_thread.start()
    writes, replays = [], []
    try:
        for batch in progress(batches, desc="ingest", unit="batch"):
            _, headers, seconds = call(port, "POST", "/records", key, {"records": batch})
            acknowledged = time.perf_counter()
            replica.wait_for_replay(lsn_parse(headers[TOKEN]))
            replays.append(time.perf_counter() - acknowledged)
            writes.append(seconds)
    finally:
        stop.set()
        reader_thread.join()
    write_summary, replay_summary = latency_summary(writes), latency_summary(replays)
    return {"batches": len(batches), "batch_records": len(batches[0]) if batches else 0,
            "write": write_summary, "replay_after_ack": replay_summary,
            "replay_over_write_p50": replay_summary["p50_ms"] / write_summary["p50_ms"], "reads_meanwhile": reading}


def run(args, database: str) -> dict:
    from django.db import connections

    from bench.corpus import make_queries, make_records
    from bench.processes import Server, database_url
    from bench.streaming_replica import StreamingReplica, primary_position
    from memseek_site.replicas import lsn_parse

    _, key, ids = build(args.size, database)
    primary_settings = dict(connections["default"].settings_dict)
    queries = [query["q"] for query in make_queries(make_records(args.size, SEED), args.queries, SEED)]
    rng = random.Random(SEED)
    reads = ([("search/lexical", "/search/lexical", lexical_body(q)) for q in queries]
             + [("records/{id}", f"/records/{rng.choice(ids)}", None) for _ in queries])
    rng.shuffle(reads)
    log("making the replica (pg_basebackup -R)")
    replica = StreamingReplica(primary_settings)
    servers = {}
    try:
        common = {"CELERY_BROKER_URL": "", "OMP_NUM_THREADS": "1", "TOUCH_ON_READ": "false"}
        primary_url = database_url(primary_settings)
        for config, env in (("primary", {"DATABASE_URL": primary_url}),
                            ("replica", {"DATABASE_URL": replica.url(database)}),
                            ("routed", {"DATABASE_URL": primary_url,
                                        "DATABASE_REPLICA_URLS": replica.url(database)})):
            log(f"starting gunicorn ({config})")
            servers[config] = Server(workers=1, env={**common, **env})
        ports = {config: server.port for config, server in servers.items()}
        replica.wait_for_replay(primary_position(primary_settings))
        _, headers, _ = call(ports["routed"], "POST", "/records", key, {"records": make_records(1, SEED + 1)})
        token = headers[TOKEN]
        replica.wait_for_replay(lsn_parse(token))
        for kind, path, payload in reads[:10]:  # warm every server's caches and connections
            for config in CONFIGS:
                call(ports[config], "GET" if payload is None else "POST", path, key, payload)
        latency = measure_latency(ports, key, reads, token)
        bodies = [lexical_body(q) for q in queries]
        throughput = measure_throughput(ports, key, bodies, args.readers, token)
        ingest = make_records(args.ingest_batches * 100, SEED + 2, dedupe_prefix="lag")
        batches = [ingest[i:i + 100] for i in range(0, len(ingest), 100)]
        lag = measure_lag(ports["routed"], key, replica, batches, bodies, args.readers)
    finally:
        for server in servers.values():
            server.stop()
        replica.remove()
    return {"size": args.size, "queries": args.queries, "latency": latency, "throughput": throughput, "lag": lag,
            "target_check_ratio": TARGET_CHECK_RATIO, "environment": setup.environment()}


def markdown(payload: dict) -> str:
    lines = [f"# Read replicas at {payload['size']:,} records", "",
             "Three gunicorn servers (one sync worker each) on one corpus: `primary` (reads on the primary), "
             "`replica` (reads on the streaming replica, no routing), `routed` (the read-your-writes router: "
             "token checked against the replica's replay, then served there). Latency over HTTP on loopback, "
             "a new connection per request, interleaved.", "",
             "| read | primary p50 ms | replica p50 ms | routed p50 ms | replica / primary | "
             f"routed / replica (check, target <= {payload['target_check_ratio']}) |",
             "| --- | --- | --- | --- | --- | --- |"]
    for kind, row in payload["latency"]["reads"].items():
        lines.append(f"| {kind} | {row['primary']['p50_ms']:.2f} | {row['replica']['p50_ms']:.2f} | "
                     f"{row['routed']['p50_ms']:.2f} | {row['replica_over_primary']:.3f} | {row['check_ratio']:.3f} |")
    throughput, lag = payload["throughput"], payload["lag"]
    lines += ["", f"Routed reads served by: {payload['latency']['routed_served_by']}.", "",
              f"Throughput, {throughput['readers']} readers: primary {throughput['primary']['per_second']:.1f} "
              f"req/s, routed {throughput['routed']['per_second']:.1f} req/s "
              f"(ratio {throughput['routed_over_primary']:.3f}; served by {throughput['routed']['served_by']}).", "",
              f"Lag under ingest ({lag['batches']} batches of {lag['batch_records']} records through `routed`, "
              f"readers reading): write p50 {lag['write']['p50_ms']:.1f} ms, replica replayed it "
              f"p50 {lag['replay_after_ack']['p50_ms']:.2f} ms / p95 {lag['replay_after_ack']['p95_ms']:.2f} ms / "
              f"max {lag['replay_after_ack']['max_ms']:.2f} ms after the acknowledgement "
              f"({lag['replay_over_write_p50']:.3f} of the write's p50); reads meanwhile served by "
              f"{lag['reads_meanwhile'].get('served_by')}.", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=5000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--ingest-batches", type=int, default=20)
    parser.add_argument("--readers", type=int, default=4)
    parser.add_argument("--database-prefix", default="memseek_bench_replicas")
    parser.add_argument("--drop", action="store_true", help="drop the corpus database afterwards")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args(argv)
    setup.django_setup()
    database = f"{args.database_prefix}_{args.size}"
    with setup.bench_database(database, drop=args.drop, cache=setup.CACHE):
        payload = run(args, database)
    from bench.quality_common import write_json

    write_json(args.out / "replicas.json", payload)
    (args.out / "replicas.md").write_text(markdown(payload))
    log(f"wrote {args.out / 'replicas.json'} and {args.out / 'replicas.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
