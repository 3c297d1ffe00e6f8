"""Smoke test of ``bench/mcp.py`` through ``python -m bench mcp``: one pass over two queries in
a throwaway database; checks what the run writes (each kind's latency beside the REST baseline
as a finite positive ratio, the target, the environment), never the figures."""
import json
import math
import uuid

import pytest
from django.db import connection

from bench.runner import run as run_bench

pytestmark = [pytest.mark.model, pytest.mark.django_db(transaction=True)]


def positive(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def test_bench_mcp_writes_each_call_beside_the_rest_call(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_PROGRESS", "0")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    # The smoke test checks what the run writes: its cold first query (the model loading) on a
    # machine the whole suite shares must not become a 503 deadline_exceeded.
    for deadline in ("REQUEST_DEADLINE_MS", "REQUEST_DEADLINE_SEARCH_MS", "REQUEST_DEADLINE_BULK_MS"):
        monkeypatch.setenv(deadline, "120000")
    database = f"memseek_smoke_mcp_{uuid.uuid4().hex[:10]}"
    test_database = connection.settings_dict["NAME"]
    run_bench("mcp", "--iterations", "1", "--queries", "2", "--starts", "1", "--out", str(tmp_path),
              "--database", database, "--drop")
    assert connection.settings_dict["NAME"] == test_database
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database])
        assert cursor.fetchone() is None
    results = json.loads((tmp_path / "mcp.json").read_text())
    for name in ("rest", "mcp_sdk", "mcp_http"):
        assert results[name]["n"] == 2 and positive(results[name]["p50_ms"]) and positive(results[name]["p95_ms"])
    for ratio in ("ratio_p50_mcp_sdk", "ratio_p95_mcp_sdk", "ratio_p50_mcp_http", "ratio_p95_mcp_http"):
        assert positive(results[ratio])
    assert results["target"]["ratio_p50_mcp_sdk_max"] == 1.2
    assert results["target"]["met"] is (results["ratio_p50_mcp_sdk"] <= 1.2)
    assert results["environment"]["machine"]["cores"] and results["config"]["queries"] == 2
    assert "÷ rest (p50)" in (tmp_path / "mcp.md").read_text()
    start = results["stdio_start"]
    for name in ("bridge_initialize", "bridge_tools_list", "http_initialize", "sdk_import", "django_setup"):
        assert start[name]["n"] == 1 and positive(start[name]["p50_ms"])
    for name in ("http_initialize", "sdk_import", "django_setup"):
        assert positive(start[f"ratio_p50_to_{name}"])
    assert start["target"]["met"] is (start["bridge_initialize"]["p50_ms"] <= 2000)
    report = (tmp_path / "mcp.md").read_text()
    assert "stdio bridge start" in report and "`tools/list` answer" in report and "`initialize` on /mcp" in report
