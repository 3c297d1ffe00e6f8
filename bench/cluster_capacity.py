"""The capacity table of ``bench cluster``: hosts of each kind for a read and a write load at a
corpus size, derived from the CPU milliseconds per request (reads) and per record (writes) that
each tier spent in the benchmark's run. The assumptions are the constants below and are printed
with the table; docs/cluster.md explains them.
"""
from __future__ import annotations

import math

TIERS = ("balancer", "api", "pooler", "database", "broker", "worker")
READ_LOADS = (100, 1_000, 10_000)  # requests per second
WRITE_LOADS = (100, 1_000)  # records per second
CORPUS_SIZES = (10_000_000, 100_000_000)

CORES_PER_HOST = 8  # every host but the broker's
BROKER_CORES = 1  # Redis runs its commands on one thread
UTILISATION = 0.6  # the share of a host's CPU planned for; the rest absorbs peaks
SPARE = 1  # one host more than the CPU needs on every tier but the broker, so losing one loses no capacity
VECTOR_BYTES_PER_RECORD = 384 * 4 * 2 + 400  # the embedding in the heap and in the HNSW index, plus its graph


def growth(corpus: int, measured: int) -> float:
    """How much a read's or a write's database CPU grows from ``measured`` records to ``corpus``:
    as log N (the HNSW walk and insert are logarithmic; the lexical index reads a term's top
    blocks, not all its postings). Never below 1."""
    return max(1.0, math.log2(corpus) / math.log2(max(measured, 2)))


def unit_costs(results: dict) -> tuple[dict[str, float], dict[str, float], int]:
    """CPU ms per read (the costlier of search and brief, tier by tier, with two API hosts), per
    written record (the two-worker ingest-to-ready block) and the records stored when the reads ran."""
    reads = {tier: max(results["blocks"][operation]["2"]["cpu_ms_per_request"].get(tier) or 0.0
                       for operation in ("search", "brief")) for tier in TIERS}
    writes = {tier: results["ready"]["2"]["cpu_ms_per_record"].get(tier) or 0.0 for tier in TIERS}
    # The reads ran over the seed records alone; the writes added to them, so counting from the seed
    # overstates the writes' growth a little, never understates it.
    return reads, writes, results["parameters"]["records"]


def hosts_for(cpu_ms_per_s: float, cores: int, spare: int) -> int:
    return math.ceil(cpu_ms_per_s / (cores * 1000 * UTILISATION)) + spare


def plan(reads: dict[str, float], writes: dict[str, float], measured: int, reads_per_s: float,
         records_per_s: float, corpus: int) -> dict[str, int]:
    """Hosts of each tier for ``reads_per_s`` reads and ``records_per_s`` written records over
    ``corpus`` records. The database is one primary taking the writes and replicas taking the
    reads (at least one, the failover standby); more than one primary means the workspaces are
    split over several primaries, each with its replicas. The pooler (PgBouncer) runs on the
    database hosts, so its CPU counts in theirs; ``pooler`` is how many PgBouncer processes that
    CPU needs (one thread each: one core at most, several share a port with ``so_reuseport``)."""
    factor = growth(corpus, measured)

    def load(tier: str, read_share: float = 1.0, write_share: float = 1.0) -> float:
        scale = factor if tier == "database" else 1.0
        return scale * (reads_per_s * reads[tier] * read_share + records_per_s * writes[tier] * write_share)

    replicas = max(1, hosts_for(load("database", write_share=0) + load("pooler", write_share=0), CORES_PER_HOST, 0))
    primaries = max(1, hosts_for(load("database", read_share=0) + load("pooler", read_share=0), CORES_PER_HOST, 0))
    return {"balancer": hosts_for(load("balancer"), CORES_PER_HOST, SPARE),
            "api": hosts_for(load("api"), CORES_PER_HOST, SPARE),
            "pooler": max(1, hosts_for(load("pooler"), 1, 0)),
            "database": primaries + replicas, "database_primaries": primaries, "database_replicas": replicas,
            "broker": max(1, hosts_for(load("broker"), BROKER_CORES, 0)),
            "worker": hosts_for(load("worker"), CORES_PER_HOST, SPARE)}


def capacity(results: dict) -> dict:
    reads, writes, measured = unit_costs(results)
    rows = []
    for corpus in CORPUS_SIZES:
        loads = [(r, 0) for r in READ_LOADS] + [(0, w) for w in WRITE_LOADS]
        for reads_per_s, records_per_s in loads:
            rows.append({"corpus": corpus, "reads_per_s": reads_per_s, "records_per_s": records_per_s,
                         "growth": round(growth(corpus, measured), 2),
                         "vector_gb_per_database_host": round(corpus * VECTOR_BYTES_PER_RECORD / 1e9),
                         "hosts": plan(reads, writes, measured, reads_per_s, records_per_s, corpus)})
    return {"assumptions": {"cores_per_host": CORES_PER_HOST, "broker_cores": BROKER_CORES,
                            "utilisation": UTILISATION, "spare_hosts": SPARE, "measured_records": measured,
                            "vector_bytes_per_record": VECTOR_BYTES_PER_RECORD},
            "cpu_ms_per_read": reads, "cpu_ms_per_record": writes, "rows": rows}


def markdown(table: dict) -> str:
    kinds = ("balancer", "api", "database_primaries", "database_replicas", "broker", "worker")
    heads = ("balancer", "API", "database primary", "database replica", "broker", "worker")
    lines = ["| records stored | load | database CPU × | " + " | ".join(f"{head} hosts" for head in heads)
             + " | PgBouncer processes | vectors per database host, GB |",
             "| ---: | --- | ---: | " + " | ".join("---:" for _ in kinds) + " | ---: | ---: |"]
    for row in table["rows"]:
        load = (f"{row['reads_per_s']:,} reads/s" if row["reads_per_s"] else f"{row['records_per_s']:,} records/s")
        hosts = " | ".join(str(row["hosts"][kind]) for kind in kinds)
        lines.append(f"| {row['corpus']:,} | {load} | {row['growth']} | {hosts} | {row['hosts']['pooler']} | "
                     f"{row['vector_gb_per_database_host']:,} |")
    costs = ["| per | " + " | ".join(TIERS) + " |", "| --- | " + " | ".join("---:" for _ in TIERS) + " |",
             "| read (CPU ms) | " + " | ".join(str(table["cpu_ms_per_read"][t]) for t in TIERS) + " |",
             "| written record (CPU ms) | " + " | ".join(str(table["cpu_ms_per_record"][t]) for t in TIERS) + " |"]
    a = table["assumptions"]
    notes = (f"Assumptions: hosts of {a['cores_per_host']} cores planned at {a['utilisation']:.0%} CPU, the broker "
             f"one Redis ({a['broker_cores']} core); {a['spare_hosts']} spare host on the balancer, API and worker "
             "tiers; the database is a primary taking the writes (more than one: workspaces split over primaries) and "
             "replicas taking the reads (at least one, the failover standby); the pooler (PgBouncer, one core a "
             "process) runs on the database hosts and its CPU is counted in theirs; database CPU per read and per "
             f"record grows as log N from the {a['measured_records']:,} records stored when measured (column "
             "'database CPU ×'); "
             "every other tier's cost per request does not depend on N, and a database host holds the whole "
             f"vector index in memory ({a['vector_bytes_per_record']:,} bytes a record: the 384 floats in the table "
             "and in the HNSW index, and its graph), or the CPU figures do not hold. A read costs the costlier of "
             "search and brief on each tier; a record costs what the two-worker ingest-to-ready block spent per "
             "record.")
    return "\n".join(costs) + "\n\n" + "\n".join(lines) + "\n\n" + notes


def capacity_report(results: dict) -> tuple[dict, str]:
    table = capacity(results)
    return table, markdown(table)
