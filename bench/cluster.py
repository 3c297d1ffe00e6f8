"""bench cluster: through HAProxy on the namespace cluster (docs/cluster.md), requests per second
and p50/p95 latency of search and ingest with one API host and with two, and the CPU milliseconds
each tier (balancer, API, database, broker, worker) spends per request.

The benchmark builds a cluster of its own (the shipped topology renamed ``mskb`` on
10.231.3.0/24) and removes it at the end. The one-API-host figures are the baseline, measured in
the same run on the same cluster: HAProxy's admin socket puts ``api2`` in maintenance for them.
A tier's CPU time is read from ``/proc`` for every process in its hosts' namespaces (children
that exited included, as PostgreSQL's backends do), before and after each block. On two cores
the point is correctness and each tier's cost, not speed-up.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from deploy.cluster import hosts, network  # noqa: E402
from deploy.cluster.control import cluster_down, cluster_up  # noqa: E402
from deploy.cluster.topology import Host, Topology, variant  # noqa: E402

QUERIES = ("renewal quote", "invoice overdue", "outage last week", "who owns the migration", "budget review",
           "customer unhappy", "follow-up call", "security questionnaire", "contract terms", "onboarding plan")
TOPICS = ("renewal", "invoice", "outage", "migration", "budget", "onboarding", "contract", "security")
TIERS = ("balancer", "api", "database", "broker", "worker")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def request(host: Host, method: str, path: str, key: str, body=None, timeout: float = 120) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection(host.address, host.port, timeout=timeout)
    try:
        connection.request(method, path, body=None if body is None else json.dumps(body),
                           headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def records(start: int, count: int) -> list[dict]:
    return [{"entity": f"contact.c{n % 50}", "type": "event",
             "text": f"Note {n}: the team discussed the {TOPICS[n % len(TOPICS)]} with customer {n % 50} "
                     f"and agreed on step {n % 7} of the plan."} for n in range(start, start + count)]


def cpu_ms(topology: Topology) -> dict[str, float]:
    """CPU milliseconds so far of each tier's processes (user + system, reaped children included)."""
    ticks = os.sysconf("SC_CLK_TCK")
    totals = dict.fromkeys(TIERS, 0.0)
    for host in topology.hosts:
        for pid in network.namespace_pids(host.namespace):
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # exited since it was listed
            # After the command name: utime, stime, cutime, cstime are fields 14 to 17 of stat(5).
            totals[host.role] += sum(int(value) for value in fields[11:15]) * 1000 / ticks
    return totals


class Block:
    """``clients`` threads sending ``make_body(n)`` to ``path`` through the balancer for ``seconds``."""

    def __init__(self, topology: Topology, key: str, path: str, make_body, clients: int, seconds: float):
        self.topology, self.key, self.path, self.make_body = topology, key, path, make_body
        self.clients, self.seconds = clients, seconds
        self.latencies: list[float] = []
        self.errors = 0
        self.counter = 0
        self.lock = threading.Lock()

    def _client(self, deadline: float) -> None:
        balancer = self.topology.one("balancer")
        while time.monotonic() < deadline:
            with self.lock:
                self.counter += 1
                number = self.counter
            start = time.perf_counter()
            try:
                status, _ = request(balancer, "POST", self.path, self.key, self.make_body(number))
            except OSError:
                status = None
            elapsed = time.perf_counter() - start
            with self.lock:
                if status == 200:
                    self.latencies.append(elapsed)
                else:
                    self.errors += 1

    def run(self) -> dict:
        before = cpu_ms(self.topology)
        started = time.monotonic()
        deadline = started + self.seconds
        threads = [threading.Thread(target=self._client, args=(deadline,)) for _ in range(self.clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.monotonic() - started
        after = cpu_ms(self.topology)
        done = sorted(self.latencies)
        count = len(done)
        return {"requests": count, "errors": self.errors, "seconds": round(wall, 2),
                "rps": round(count / wall, 2),
                "p50_ms": round(done[count // 2] * 1000, 1) if count else None,
                "p95_ms": round(done[min(count - 1, int(count * 0.95))] * 1000, 1) if count else None,
                "cpu_ms_per_request": {tier: round((after[tier] - before[tier]) / count, 2) if count else None
                                       for tier in TIERS}}


def api_hosts_in_rotation(topology: Topology, count: int) -> None:
    """Keep the first ``count`` API hosts in HAProxy's rotation, the others in maintenance."""
    for index, api in enumerate(topology.of_role("api")):
        verb = "enable" if index < count else "disable"
        hosts.haproxy_command(topology, f"{verb} server api_hosts/{api.name}")
    deadline = time.monotonic() + 30  # an enabled host serves again after its next passed check
    while True:
        states = hosts.haproxy_servers(topology)
        if sum(state == "UP" for state in states.values()) == count:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"HAProxy should route to {count} API host(s), states: {states}")
        time.sleep(0.3)


def seed(topology: Topology, key: str, count: int) -> None:
    balancer = topology.one("balancer")
    for start in range(0, count, 100):
        status, body = request(balancer, "POST", "/records", key, {"records": records(start, min(100, count - start))})
        assert status == 200, body[:500]
    deadline = time.monotonic() + 1800
    while time.monotonic() < deadline:
        status, body = request(balancer, "GET", "/health", key)
        if json.loads(body)["backlog"]["pending_records"] == 0:
            return
        time.sleep(2)
    raise RuntimeError("the seed records were not enriched within 30 minutes")


def environment() -> dict:
    haproxy = subprocess.run(["haproxy", "-v"], capture_output=True, text=True).stdout.splitlines()[0]
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    return {"machine": {"cores": os.cpu_count(), "platform": platform.platform(),
                        "load_average_at_start": [round(x, 2) for x in os.getloadavg()]},
            "versions": {"python": platform.python_version(), "haproxy": haproxy}, "git": {"commit": commit}}


def report(results: dict) -> str:
    lines = ["| operation | API hosts | requests/s | vs 1 host | p50 ms | p95 ms | errors | "
             + " | ".join(f"CPU ms/request: {tier}" for tier in TIERS) + " |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | " + " | ".join("---:" for _ in TIERS) + " |"]
    for operation, by_hosts in results["blocks"].items():
        baseline = by_hosts["1"]["rps"]
        for count, block in by_hosts.items():
            ratio = f"{block['rps'] / baseline:.2f}x" if baseline else "n/a"
            cpu = " | ".join(str(block["cpu_ms_per_request"][tier]) for tier in TIERS)
            lines.append(f"| {operation} | {count} | {block['rps']} | {ratio} | {block['p50_ms']} | "
                         f"{block['p95_ms']} | {block['errors']} | {cpu} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1000, help="records ingested and enriched before measuring")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients of each block")
    parser.add_argument("--seconds", type=float, default=20, help="length of each block")
    parser.add_argument("--batch", type=int, default=10, help="records per ingest request")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "cluster")
    args = parser.parse_args(argv)
    env = environment()
    with tempfile.TemporaryDirectory(prefix="memseek-bench-cluster-") as directory:
        topology = variant(Path(directory), name="mskb", subnet="10.231.3.0/24")
        try:
            cluster_up(topology, log=log)
            key = hosts.manage(topology, "create_workspace", "bench").strip().splitlines()[-1]
            hosts.manage(topology, "load_catalog", "fixtures/catalogs/example", "--workspace", "bench")
            log(f"seeding {args.records} records ...")
            seed(topology, key, args.records)
            operations = {
                "search": ("/search", lambda n: {"q": QUERIES[n % len(QUERIES)], "mode": "hybrid",
                                                 "scope": {"collections": ["main"]}, "k": 10}),
                "ingest": ("/records", lambda n: {"records": records(10_000_000 + n * args.batch, args.batch)}),
            }
            for api in topology.of_role("api"):  # warm each host's caches, so no block pays for a first request
                for n in range(5):
                    status, body = request(api, "POST", "/search", key, operations["search"][1](n))
                    assert status == 200, body[:500]
            blocks: dict = {}
            for operation, (path, make_body) in operations.items():
                for count in (1, 2):
                    api_hosts_in_rotation(topology, count)
                    log(f"{operation} with {count} API host(s) ...")
                    blocks.setdefault(operation, {})[str(count)] = Block(
                        topology, key, path, make_body, args.clients, args.seconds).run()
            env["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
        finally:
            cluster_down(topology, log=log)
    results = {"parameters": vars(args) | {"out": str(args.out)}, "environment": env, "blocks": blocks}
    table = report(results)
    print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    args.out.with_suffix(".md").write_text(
        "# bench cluster: search and ingest through HAProxy with one and two API hosts\n\n"
        f"The namespace cluster of docs/cluster.md on one machine ({env['machine']['cores']} cores shared by every "
        f"host), {args.records} records enriched before measuring, {args.clients} concurrent clients for "
        f"{args.seconds:g} s per block; search is POST /search (hybrid, k 10), ingest POST /records of "
        f"{args.batch} records (enrichment runs on the worker hosts meanwhile, so its CPU shows in the worker "
        "column and lags the block). The one-API-host rows are the baseline of the same run (api2 in HAProxy "
        "maintenance). CPU ms/request is each tier's CPU time over the block divided by the requests answered.\n\n"
        f"{table}\n\nMachine: {env['machine']}\n\nVersions: {env['versions']}\n\nCommit: {env['git']}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
