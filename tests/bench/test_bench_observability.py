"""Smoke test of ``bench/observability.py``: it runs end to end through ``python -m bench`` on a
tiny corpus and leaves no database behind. It checks what a run writes (each configuration
beside the baseline as finite positive figures), never the figures themselves."""
import json
import math
import uuid

import pytest
from django.db import connection

from memseek_site.tracing import active_tracer

from bench.runner import run as run_bench

pytestmark = [pytest.mark.metrics, pytest.mark.model, pytest.mark.django_db(transaction=True)]


def positive(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def test_observability_bench_on_a_tiny_corpus(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_PROGRESS", "0")
    prefix = f"memseek_smoke_{uuid.uuid4().hex[:10]}"
    test_database = connection.settings_dict["NAME"]
    run_bench("observability", "--size", 40, "--queries", 3, "--rounds", 2, "--database-prefix", prefix,
              "--drop", "--out", tmp_path)
    assert connection.settings_dict["NAME"] == test_database
    assert active_tracer() is None  # tracing is off again after the run
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_database WHERE datname LIKE %s", [prefix + "%"])
        assert cursor.fetchone()[0] == 0
    result = json.loads((tmp_path / "observability.json").read_text())
    assert [(row["request"], row["config"]) for row in result["rows"]] == [
        (request, config) for request in ("search", "health") for config in ("baseline", "metrics",
                                                                            "metrics + tracing")]
    for row in result["rows"]:
        assert row["n"] == 3 * 2 and positive(row["p50_ms"]) and positive(row["ratio_p50"]), row
    report = (tmp_path / "observability.md").read_text()
    assert report.startswith("# Observability cost at 40 records") and report.count("\n| ") == 6 + 2
