"""Smoke test of ``bench failover`` (``bench/failover.py``) with the fewest commits: it starts and
removes its own Patroni cluster, and writes both settings' figures. It checks what the run
writes, never the figures."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bench.test_bench_smoke import assert_environment

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.failover,
    pytest.mark.skipif(shutil.which("etcd") is None, reason="bench failover needs etcd on PATH, and there is none: "
                       "apt-get install etcd-server etcd-client (.ci/run installs them)"),
]


def test_failover_bench_on_a_few_commits(tmp_path):
    out = tmp_path / "failover"
    subprocess.run([sys.executable, "-m", "bench", "failover", "--commits", "20", "--threads", "2",
                    "--seconds", "1", "--blocks", "2", "--out", str(out)], cwd=ROOT, check=True, timeout=600,
                   env={**os.environ, "OMP_NUM_THREADS": "1"})

    result = json.loads(out.with_suffix(".json").read_text())
    assert_environment(result)
    assert result["environment"]["versions"]["postgres_server"].startswith("18")
    for setting in ("on", "local"):
        latency = result["latency"][setting]
        assert latency["n"] == 20 and 0 < latency["p50_ms"] <= latency["p95_ms"] <= latency["max_ms"]
        assert result["throughput"][setting]["commits"] > 0
    report = out.with_suffix(".md").read_text()
    assert report.startswith("# bench failover") and "| commit latency p50, 1 connection |" in report
