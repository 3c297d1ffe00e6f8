"""The capacity table of ``bench cluster`` (``bench/cluster_capacity.py``): hosts derived from CPU
milliseconds per request and per record, checked against hand-worked figures and, on random
costs, for never asking fewer hosts of a heavier load."""
import json
import math

from hypothesis import given
from hypothesis import strategies as st

from bench.cluster_capacity import TIERS, capacity_report, growth, plan

ZERO = dict.fromkeys(TIERS, 0.0)


def results(read: dict, record: dict, records: int = 1000, ready: int = 300) -> dict:
    block = {"cpu_ms_per_request": read}
    return {"parameters": {"records": records},
            "blocks": {"search": {"2": block}, "brief": {"2": {"cpu_ms_per_request": ZERO}}},
            "ready": {"1": {"records": ready, "cpu_ms_per_record": ZERO},
                      "2": {"records": ready, "cpu_ms_per_record": record}}}


def test_growth_is_log_n_from_the_measured_size_and_never_shrinks():
    assert growth(1_000_000, 1000) == 2.0
    assert growth(10, 1000) == 1.0


def test_hand_worked_plan():
    reads = ZERO | {"balancer": 0.5, "api": 12.0, "database": 6.0, "broker": 0.3, "worker": 2.0}
    writes = ZERO | {"api": 1.0, "database": 3.0, "worker": 20.0}
    # 1,000 reads/s at the measured size: API 12,000 ms/s over 8 cores at 60% (4,800) -> 3 + 1 spare;
    # database reads 6,000 -> 2 replicas + 1 primary; broker 300 ms/s on one core (600) -> 1;
    # workers 2,000 -> 1 + 1 spare; balancer 500 -> 1 + 1 spare.
    hosts = plan(reads, writes, 1024, 1000, 0, 1024)
    assert {k: hosts[k] for k in ("balancer", "api", "database", "broker", "worker")} == \
        {"balancer": 2, "api": 4, "database": 3, "broker": 1, "worker": 2}
    # 1,000 records/s at 1,024² records: the database cost doubles (log N), 6,000 ms/s of writes:
    # more than one primary can give (4,800), so two, and one replica still; workers 20,000 -> 5 + 1.
    hosts = plan(reads, writes, 1024, 0, 1000, 1024 ** 2)
    assert (hosts["database_primaries"], hosts["database_replicas"], hosts["database"]) == (2, 1, 3)
    assert hosts["worker"] == 6 and hosts["api"] == 2


costs = st.fixed_dictionaries({tier: st.floats(0, 100) for tier in TIERS})


@given(costs, costs, st.integers(0, 20_000), st.integers(0, 20_000), st.integers(0, 2000),
       st.sampled_from([10**6, 10**7, 10**8]))
def test_a_heavier_load_or_a_larger_corpus_never_needs_fewer_hosts(reads, writes, r, extra, w, corpus):
    light = plan(reads, writes, 1000, r, w, corpus)
    for heavier in (plan(reads, writes, 1000, r + extra, w, corpus), plan(reads, writes, 1000, r, w + extra, corpus),
                    plan(reads, writes, 1000, r, w, corpus * 10)):
        assert all(heavier[kind] >= light[kind] for kind in light)
    # Every tier can carry its load: the planned hosts' CPU at 60% covers it.
    assert light["api"] * 8 * 1000 * 0.6 >= r * reads["api"] + w * writes["api"] - 1e-6
    assert light["worker"] >= 1 and light["database"] >= 2 and light["broker"] >= 1


def test_report_has_a_row_per_load_and_size_and_states_its_assumptions():
    table, text = capacity_report(results(ZERO | {"api": 10.0, "database": 5.0}, ZERO | {"worker": 15.0}))
    assert len(table["rows"]) == 2 * (3 + 2)
    assert table["assumptions"]["measured_records"] == 1000
    assert "| 100,000,000 | 10,000 reads/s |" in text and "| 10,000,000 | 1,000 records/s |" in text
    assert "log N" in text and "60%" in text
    top = [row for row in table["rows"] if row["corpus"] == 10**8 and row["reads_per_s"] == 10_000][0]
    assert top["hosts"]["api"] == math.ceil(10_000 * 10 / 4800) + 1


def test_a_run_is_republished_from_its_json_without_a_cluster(tmp_path):
    from bench.cluster import main

    def block(api_ms: float) -> dict:
        return {"rps": 20.0, "p50_ms": 300.0, "p95_ms": 500.0, "errors": 0, "requests": 400,
                "cpu_ms_per_request": ZERO | {"api": api_ms, "database": 8.0}}

    run = results(ZERO, ZERO | {"api": 1.0, "database": 2.0, "worker": 25.0})
    run["blocks"] = {op: {"1": block(10.0), "2": block(12.0)} for op in ("search", "brief", "ingest")}
    run["ready"] = {hosts: {"records": 300, "seconds": 10.0 / int(hosts), "records_per_s": 30.0 * int(hosts),
                            "cpu_ms_per_record": run["ready"]["2"]["cpu_ms_per_record"]} for hosts in ("1", "2")}
    run["parameters"] |= {"clients": 8, "seconds": 20, "batch": 10, "ready_records": 300}
    run["environment"] = {"machine": {"cores": 2}, "versions": {}, "git": {"commit": "x"}}
    source = tmp_path / "earlier.json"
    source.write_text(json.dumps(run))
    assert main(["--from", str(source), "--out", str(tmp_path / "cluster")]) == 0
    report = (tmp_path / "cluster.md").read_text()
    assert "| brief | 2 | 20.0 | 1.00x |" in report and "| records | 2 | 300 | 5.0 | 60.0 | 2.00x |" in report
    assert "## Capacity derived from these figures" in report and "| 10,000,000 | 100 reads/s |" in report
    # The read cost is the costlier of search and brief per tier: 12 ms of API CPU.
    written = json.loads((tmp_path / "cluster.json").read_text())
    assert written["capacity"]["cpu_ms_per_read"]["api"] == 12.0
