"""Smoke test of ``bench/lookups.py``: it runs end to end through ``python -m bench`` on a tiny
corpus and leaves no database behind. It checks what a run writes (every lookup beside its raw
SQL replay as finite positive figures), never the figures themselves."""
import json
import math
import uuid

import pytest
from django.db import connection

from bench.runner import run as run_bench

pytestmark = pytest.mark.django_db(transaction=True)

LOOKUPS = ["grep (workspace)", "grep (one entity)", "latest (workspace)", "latest (one entity)", "latest (one day)",
           "around (5 + 5)", "read (passage)", "read (fact)", "ls (root)", "ls (entities)",
           "ls (one entity's passages)", "ls (one entity's facts)", "history"]


def positive(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def test_lookups_bench_on_a_tiny_corpus(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_PROGRESS", "0")
    prefix = f"memseek_smoke_{uuid.uuid4().hex[:10]}"
    test_database = connection.settings_dict["NAME"]
    run_bench("lookups", "--size", 300, "--queries", 3, "--database-prefix", prefix, "--drop",
              "--out", tmp_path)
    assert connection.settings_dict["NAME"] == test_database
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_database WHERE datname LIKE %s", [prefix + "%"])
        assert cursor.fetchone()[0] == 0
    result = json.loads((tmp_path / "lookups.json").read_text())
    assert result["size"] == 300 and [row["lookup"] for row in result["lookups"]] == LOOKUPS
    for row in result["lookups"]:
        assert row["queries"] == 3 and positive(row["ratio_p50"]), row
        assert all(positive(row[side][key]) for side in ("service", "baseline") for key in ("p50_ms", "p95_ms"))
        assert isinstance(row["meets_target"], bool)
    report = (tmp_path / "lookups.md").read_text()
    assert report.startswith("# Memory lookups at 300 records") and report.count("\n| ") == len(LOOKUPS) + 1
