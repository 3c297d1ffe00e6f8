"""``bench failover``: what synchronous mode costs a write, on a two-node Patroni cluster
(``bench/patroni_cluster.py``, the failover tests' cluster from ``deploy/patroni/patroni.yml``).

Measured: a one-row ``INSERT`` and its ``COMMIT`` through the multi-host ``DATABASE_URL``, with
``synchronous_commit`` ``on`` (the commit waits for the synchronous standby's flush: what every
Memseek write gets in synchronous mode) beside the same statement with ``synchronous_commit``
``local`` (the primary's own fsync only: what it would get without synchronous mode), in the same
run on the same connections. Latency: one connection, the two settings alternating commit by
commit. Throughput: ``--threads`` connections committing for ``--seconds``, the two settings in
alternating blocks. Writes JSON and markdown to ``bench/results/failover.*``.

    python -m bench failover [--commits 2000] [--threads 8] [--seconds 10] [--blocks 4]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.patroni_cluster import PatroniCluster  # noqa: E402 (after the path insert)
from bench.harness import in_turn, log  # noqa: E402
from bench.search_setup import latency_summary  # noqa: E402

SETTINGS = ("on", "local")
INSERT = "INSERT INTO bench_commit (payload) VALUES (%s)"


def _commit(connection, setting: str) -> float:
    started = time.perf_counter()
    with connection.transaction():
        connection.execute("SELECT set_config('synchronous_commit', %s, true)", (setting,))
        connection.execute(INSERT, ("x" * 200,))
    return time.perf_counter() - started


def measure_latency(url: str, commits: int) -> dict:
    import psycopg

    samples: dict[str, list[float]] = {setting: [] for setting in SETTINGS}
    with psycopg.connect(url, autocommit=True) as connection:
        for index in range(commits):
            # Alternate, rotating which setting goes first, so drift hits both alike.
            order = in_turn(SETTINGS, index)
            for setting in order:
                samples[setting].append(_commit(connection, setting))
    return {setting: latency_summary(values) for setting, values in samples.items()}


def measure_throughput(url: str, threads: int, seconds: float, blocks: int) -> dict:
    import psycopg

    counts = {setting: 0 for setting in SETTINGS}
    elapsed = {setting: 0.0 for setting in SETTINGS}
    connections = [psycopg.connect(url, autocommit=True) for _ in range(threads)]
    try:
        for block in range(blocks):
            setting = SETTINGS[block % 2]
            done = [0] * threads
            deadline = time.monotonic() + seconds

            def run(number: int, setting=setting, deadline=deadline, done=done) -> None:
                while time.monotonic() < deadline:
                    _commit(connections[number], setting)
                    done[number] += 1

            started = time.monotonic()
            workers = [threading.Thread(target=run, args=(n,)) for n in range(threads)]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join()
            counts[setting] += sum(done)
            elapsed[setting] += time.monotonic() - started
    finally:
        for connection in connections:
            connection.close()
    return {setting: {"commits": counts[setting], "seconds": round(elapsed[setting], 2),
                      "commits_per_s": counts[setting] / elapsed[setting]} for setting in SETTINGS}


def report(results: dict) -> str:
    latency, throughput = results["latency"], results["throughput"]
    on, local = latency["on"], latency["local"]
    lines = [
        "| Measure | synchronous_commit on (synchronous mode) | local (baseline) | ratio |",
        "| --- | --- | --- | --- |",
        f"| commit latency p50, 1 connection | {on['p50_ms']:.2f} ms | {local['p50_ms']:.2f} ms | "
        f"{on['p50_ms'] / local['p50_ms']:.2f}x |",
        f"| commit latency p95, 1 connection | {on['p95_ms']:.2f} ms | {local['p95_ms']:.2f} ms | "
        f"{on['p95_ms'] / local['p95_ms']:.2f}x |",
        f"| commits/s, {results['parameters']['threads']} connections | {throughput['on']['commits_per_s']:.0f} | "
        f"{throughput['local']['commits_per_s']:.0f} | "
        f"{throughput['on']['commits_per_s'] / throughput['local']['commits_per_s']:.2f}x |",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=2000, help="commits per setting for the latency")
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10, help="length of one throughput block")
    parser.add_argument("--blocks", type=int, default=4, help="throughput blocks, the settings alternating")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "failover")
    args = parser.parse_args(argv)

    cluster = PatroniCluster(nodes=2)
    try:
        import psycopg

        with psycopg.connect(cluster.url("postgres"), autocommit=True) as connection:
            connection.execute('CREATE DATABASE "memseek"')
        url = cluster.url("memseek")
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute("CREATE TABLE bench_commit (id bigserial PRIMARY KEY, payload text)")
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memseek_site.settings")
        from bench.search_setup import _point_default_at, django_setup, environment

        django_setup()
        # The run's metadata (server version included) from the cluster, under python -m bench too.
        os.environ["DATABASE_URL"] = url
        from django.db import connections

        from memseek_site.database import database_settings

        _point_default_at({**connections["default"].settings_dict, **database_settings(ROOT)})
        env = environment()
        log("latency ...")
        latency = measure_latency(url, args.commits)
        log("throughput ...")
        throughput = measure_throughput(url, args.threads, args.seconds, args.blocks)
        assert cluster.sync_standby() is not None, "the synchronous standby left during the run"
        env["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    finally:
        cluster.stop()
    results = {"parameters": vars(args) | {"out": str(args.out)}, "environment": env,
               "latency": latency, "throughput": throughput}
    table = report(results)
    print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    args.out.with_suffix(".md").write_text(
        "# bench failover: synchronous mode's cost per write\n\n"
        "Two Patroni nodes on one machine (loopback: the standby's round trip is nearly free, so the ratio is "
        "mostly the standby's fsync; across hosts add the network round trip). A one-row INSERT + COMMIT with "
        "`synchronous_commit` `on` (what synchronous mode gives every write) beside `local` (the primary's own "
        "fsync only), same run, same connections.\n\n"
        f"{table}\n\nMachine: {env['machine']}\n\nVersions: {env['versions']}\n\nCommit: {env['git']}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
