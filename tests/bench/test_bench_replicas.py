"""Smoke test of ``bench/replicas.py``: it runs end to end through ``python -m bench`` on a tiny
corpus (a real streaming replica, three gunicorn servers) and leaves no database behind. It checks
what a run writes (every figure finite and positive, routed reads served by the replica), never
the figures themselves."""
import json
import math
import uuid

import pytest
from django.db import connection

from bench.runner import run as run_bench

pytestmark = [pytest.mark.replica, pytest.mark.django_db(transaction=True)]


def positive(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def test_replicas_bench_on_a_tiny_corpus(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_PROGRESS", "0")
    prefix = f"memseek_smoke_{uuid.uuid4().hex[:10]}"
    test_database = connection.settings_dict["NAME"]
    run_bench("replicas", "--size", 200, "--queries", 4, "--ingest-batches", 2, "--readers", 2,
              "--database-prefix", prefix, "--drop", "--out", tmp_path)
    assert connection.settings_dict["NAME"] == test_database
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_database WHERE datname LIKE %s", [prefix + "%"])
        assert cursor.fetchone()[0] == 0
    result = json.loads((tmp_path / "replicas.json").read_text())
    reads = result["latency"]["reads"]
    assert set(reads) == {"search/lexical", "records/{id}"}
    for row in reads.values():
        assert all(row[config]["n"] == 4 and positive(row[config]["p50_ms"])
                   for config in ("primary", "replica", "routed")), row
        assert positive(row["replica_over_primary"]) and positive(row["check_ratio"])
    # The routed server's reads carried a token the replica had replayed: all went to the replica.
    assert result["latency"]["routed_served_by"] == {"replica_0": 8}
    throughput, lag = result["throughput"], result["lag"]
    assert throughput["primary"]["requests"] == throughput["routed"]["requests"] == 8
    assert positive(throughput["routed_over_primary"])
    assert lag["batches"] == 2 and lag["batch_records"] == 100 and positive(lag["write"]["p50_ms"])
    assert lag["replay_after_ack"]["n"] == 2 and lag["replay_after_ack"]["min_ms"] >= 0
    report = (tmp_path / "replicas.md").read_text()
    assert report.startswith("# Read replicas at 200 records") and report.count("\n| ") == 2 + 2
