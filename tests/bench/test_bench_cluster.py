"""Smoke test of ``bench cluster`` (``bench/cluster.py``) on a tiny corpus with short blocks: it
builds and removes its own namespace cluster and writes every block's figures and the capacity table. It checks what the
run writes, never the figures."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from deploy.cluster import network
from deploy.cluster.topology import variant
from tests.deploy.cluster_support import missing_prerequisite

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.cluster


def test_cluster_bench_on_a_tiny_corpus(tmp_path):
    reason = missing_prerequisite()
    if reason:
        pytest.skip(reason)
    out = tmp_path / "cluster"
    subprocess.run([sys.executable, "-m", "bench", "cluster", "--records", "20", "--clients", "2",
                    "--seconds", "2", "--ready-records", "20", "--out", str(out)], cwd=ROOT, check=True, timeout=900)

    result = json.loads(out.with_suffix(".json").read_text())
    assert result["environment"]["machine"]["cores"] > 0 and result["environment"]["git"]["commit"]
    for operation in ("search", "brief", "ingest"):
        for hosts in ("1", "2"):
            block = result["blocks"][operation][hosts]
            assert block["requests"] > 0 and block["errors"] == 0
            assert 0 < block["p50_ms"] <= block["p95_ms"]
            assert set(block["cpu_ms_per_request"]) == {"balancer", "api", "pooler", "database", "broker", "worker"}
            assert block["cpu_ms_per_request"]["api"] > 0
    for workers in ("1", "2"):  # every record written was enriched, by one worker host, then by two
        ready = result["ready"][workers]
        assert ready["records"] == 20 and ready["records_per_s"] > 0 and ready["cpu_ms_per_record"]["worker"] > 0
    assert len(result["capacity"]["rows"]) == 10
    report = out.with_suffix(".md").read_text()
    assert report.startswith("# bench cluster") and "| search | 2 |" in report and "| ingest | 1 |" in report
    assert "| brief | 1 |" in report and "| records | 2 | 20 |" in report
    assert "| 100,000,000 | 1,000 records/s |" in report
    # The benchmark's own cluster is gone.
    built = variant(tmp_path, name="mskb", subnet="10.231.3.0/24")
    assert not network.namespaces() & {host.namespace for host in built.hosts}
