"""bench cluster: through HAProxy on the namespace cluster (docs/cluster.md), requests per second
and p50/p95 latency of search, brief and ingest with one API host and with two, ingest-to-ready
records per second with one worker host and with two, and the CPU milliseconds each tier
(balancer, API, pooler, database, broker, worker) spends per request or record; from those, the
capacity table of ``bench/cluster_capacity.py``.

The benchmark builds a cluster of its own (the shipped topology renamed ``mskb`` on
10.231.3.0/24) and removes it at the end. The one-API-host figures are the baseline, measured in
the same run on the same cluster: HAProxy's admin socket puts ``api2`` in maintenance for them;
likewise one worker host is the baseline of two (``worker2`` stopped, then started again).
A tier's CPU time is read from ``/proc`` for every process in its hosts' namespaces (children
that exited included, as PostgreSQL's backends do), before and after each block. On two cores
the point is correctness and each tier's cost, not speed-up.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
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

from bench.cluster_capacity import TIERS, capacity_report  # noqa: E402
from bench import harness  # noqa: E402
from bench.harness import log  # noqa: E402

QUERIES = ("renewal quote", "invoice overdue", "outage last week", "who owns the migration", "budget review",
           "customer unhappy", "follow-up call", "security questionnaire", "contract terms", "onboarding plan")
TOPICS = ("renewal", "invoice", "outage", "migration", "budget", "onboarding", "contract", "security")


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
    """CPU milliseconds so far of each tier's processes (user + system, reaped children included).
    PgBouncer runs on the database host; its process counts as the pooler tier."""
    ticks = os.sysconf("SC_CLK_TCK")
    totals = dict.fromkeys(TIERS, 0.0)
    for host in topology.hosts:
        for pid in network.namespace_pids(host.namespace):
            try:
                command, fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)
            except OSError:
                continue  # exited since it was listed
            tier = "pooler" if command.endswith("(pgbouncer") else host.role
            # After the command name: utime, stime, cutime, cstime are fields 14 to 17 of stat(5).
            totals[tier] += sum(int(value) for value in fields.split()[11:15]) * 1000 / ticks
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
                "cpu_ms_per_request": per_unit(before, after, count)}


def per_unit(before: dict[str, float], after: dict[str, float], count: int) -> dict[str, float | None]:
    return {tier: round((after[tier] - before[tier]) / count, 2) if count else None for tier in TIERS}


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


def write(topology: Topology, key: str, start: int, count: int, batch: int) -> None:
    balancer = topology.one("balancer")
    for offset in range(start, start + count, batch):
        status, body = request(balancer, "POST", "/records", key,
                               {"records": records(offset, min(batch, start + count - offset))})
        assert status == 200, body[:500]


def wait_ready(topology: Topology, key: str, poll_s: float) -> None:
    """Until no record waits for enrichment (``/health``'s backlog)."""
    balancer = topology.one("balancer")
    deadline = time.monotonic() + 1800
    while time.monotonic() < deadline:
        status, body = request(balancer, "GET", "/health", key)
        if json.loads(body)["backlog"]["pending_records"] == 0:
            return
        time.sleep(poll_s)
    raise RuntimeError("the records were not enriched within 30 minutes")


def seed(topology: Topology, key: str, count: int) -> None:
    write(topology, key, 0, count, 100)
    wait_ready(topology, key, 2)


def ingest_to_ready(topology: Topology, key: str, start: int, count: int, batch: int) -> dict:
    """Write ``count`` records through the balancer, ``batch`` a request, and time until every
    one is enriched; CPU per record of every tier over that window."""
    before = cpu_ms(topology)
    started = time.monotonic()
    write(topology, key, start, count, batch)
    written = time.monotonic() - started
    wait_ready(topology, key, 0.25)
    wall = time.monotonic() - started
    after = cpu_ms(topology)
    return {"records": count, "write_seconds": round(written, 2), "seconds": round(wall, 2),
            "records_per_s": round(count / wall, 2), "cpu_ms_per_record": per_unit(before, after, count)}


def worker_blocks(topology: Topology, key: str, count: int, batch: int) -> dict:
    """Ingest-to-ready with the last worker host stopped (the baseline), then with every one."""
    spare = topology.of_role("worker")[-1]
    network.host_stop(spare)
    log(f"ingest-to-ready of {count} records with 1 worker host ...")
    blocks = {"1": ingest_to_ready(topology, key, 20_000_000, count, batch)}
    hosts.worker_wait(topology, spare, hosts.worker_start(topology, spare))
    log(f"ingest-to-ready of {count} records with 2 worker hosts ...")
    blocks["2"] = ingest_to_ready(topology, key, 30_000_000, count, batch)
    return blocks


def environment() -> dict:
    """The harness's run record (no database of this process, no torch) and HAProxy's version."""
    env = harness.environment(database=False, torch=False)
    env["versions"]["haproxy"] = (harness.command_output(["haproxy", "-v"]).splitlines() or [""])[0]
    return env


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
    lines += ["", "| ingest-to-ready | worker hosts | records | seconds | records/s | vs 1 host | "
              + " | ".join(f"CPU ms/record: {tier}" for tier in TIERS) + " |",
              "| --- | ---: | ---: | ---: | ---: | ---: | " + " | ".join("---:" for _ in TIERS) + " |"]
    by_workers = results["ready"]
    for count, block in by_workers.items():
        baseline = by_workers["1"]["records_per_s"]
        ratio = f"{block['records_per_s'] / baseline:.2f}x" if baseline else "n/a"
        cpu = " | ".join(str(block["cpu_ms_per_record"][tier]) for tier in TIERS)
        lines.append(f"| records | {count} | {block['records']} | {block['seconds']} | {block['records_per_s']} | "
                     f"{ratio} | {cpu} |")
    return "\n".join(lines)


def publish(results: dict, out: Path) -> None:
    """Derive the capacity table, print the measured table, write ``out``.json and ``out``.md."""
    results["capacity"], capacity = capacity_report(results)
    table = report(results)
    print(table)
    env, p = results["environment"], results["parameters"]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    out.with_suffix(".md").write_text(
        "# bench cluster: search, brief and ingest through HAProxy; ingest-to-ready with one and two worker hosts\n\n"
        f"The namespace cluster of docs/cluster.md on one machine ({env['machine']['cores']} cores shared by every "
        f"host), {p['records']} records enriched before measuring, {p['clients']} concurrent clients for "
        f"{p['seconds']:g} s per block; search is POST /search (hybrid, k 10), brief POST /memory/search, ingest "
        f"POST /records of {p['batch']} records (enrichment runs on the worker hosts meanwhile, so its CPU shows "
        "in the worker column and lags the block). The one-API-host rows are the baseline of the same run (api2 "
        "in HAProxy maintenance). CPU ms/request is each tier's CPU time over the block divided by the requests "
        "answered; the pooler column is the PgBouncer process on the database host, the database column "
        "PostgreSQL's. Ingest-to-ready writes "
        f"{p['ready_records']} records ({p['batch']} a request, both API hosts) and times until /health reports no "
        "record pending enrichment; one worker host (worker2 stopped) is the baseline of two.\n\n"
        f"{table}\n\n## Capacity derived from these figures\n\n{capacity}\n\n"
        f"Machine: {env['machine']}\n\nVersions: {env['versions']}\n\nCommit: {env['git']}\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1000, help="records ingested and enriched before measuring")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients of each block")
    parser.add_argument("--seconds", type=float, default=20, help="length of each block")
    parser.add_argument("--batch", type=int, default=10, help="records per ingest request")
    parser.add_argument("--ready-records", type=int, default=300,
                        help="records of each ingest-to-ready block (one and two worker hosts)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "cluster")
    parser.add_argument("--from", dest="source", type=Path,
                        help="re-derive the capacity table and rewrite --out from this earlier run's JSON, "
                             "without building a cluster")
    args = parser.parse_args(argv)
    if args.source:
        publish(json.loads(args.source.read_text()), args.out)
        return 0
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
                "brief": ("/memory/search", lambda n: {"query": QUERIES[n % len(QUERIES)]}),
                "ingest": ("/records", lambda n: {"records": records(10_000_000 + n * args.batch, args.batch)}),
            }
            for api in topology.of_role("api"):  # warm each host's caches, so no block pays for a first request
                for n in range(5):
                    status, body = request(api, "POST", "/search", key, operations["search"][1](n))
                    assert status == 200, body[:500]
            blocks: dict = {}
            for operation, (path, make_body) in operations.items():
                if operation == "ingest":  # before ingest blocks leave an enrichment backlog behind
                    ready = worker_blocks(topology, key, args.ready_records, args.batch)
                for count in (1, 2):
                    api_hosts_in_rotation(topology, count)
                    log(f"{operation} with {count} API host(s) ...")
                    blocks.setdefault(operation, {})[str(count)] = Block(
                        topology, key, path, make_body, args.clients, args.seconds).run()
            env["machine"]["load_average_at_end"] = harness.load_average()
        finally:
            cluster_down(topology, log=log)
    results = {"parameters": vars(args) | {"out": str(args.out)}, "environment": env, "blocks": blocks,
               "ready": ready}
    publish(results, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
