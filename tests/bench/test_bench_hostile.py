"""Smoke test of ``bench/hostile.py`` through ``python -m bench hostile``: two hostile texts and
one ordinary call per route in a throwaway database; checks what the run writes (each route's
figures beside its ordinary baseline as a finite positive ratio, the rule's verdict), never the
figures themselves."""
import json
import math
import uuid

import pytest

from bench.hostile_texts import MCP_TOOLS, ROUTES

from bench.runner import run as run_bench

pytestmark = [pytest.mark.model, pytest.mark.django_db(transaction=True)]


def positive(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def test_bench_hostile_writes_each_route_beside_its_ordinary_question(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_PROGRESS", "0")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    run_bench("hostile", "--ordinary", "1", "--texts", "2", "--out", str(tmp_path),
              "--database", f"memseek_smoke_hostile_{uuid.uuid4().hex[:10]}", "--drop")
    results = json.loads((tmp_path / "hostile.json").read_text())
    assert set(results["routes"]) == set(ROUTES) | {f"mcp:{tool}" for tool in MCP_TOOLS}
    for route in results["routes"].values():
        assert positive(route["ordinary_p50_ms"]) and positive(route["worst_ms"]) and positive(route["ratio"])
        assert route["broken"] == {}  # every answer a JSON envelope within the rule
        assert route["ordinary_statuses"] == [200]
        assert len(route["hostile_ms"]) == 2 and route["target_ms"] <= route["deadline_ms"]
    assert results["config"]["hostile_texts"] == ["one_word_max_length", "one_date_word_max_length"]
    assert "÷ ordinary" in (tmp_path / "hostile.md").read_text()
