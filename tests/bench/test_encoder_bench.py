"""Smoke test of ``bench/encoder.py`` on the tiny SciFact fixture: every runtime runs in its own
process and the run writes each figure beside torch's as a finite positive ratio, the agreement
statistics of both ONNX runtimes, and the markdown table. It checks what a run writes, never the
figures themselves."""
import json
import math
from pathlib import Path

import pytest
from django.conf import settings

from bench import encoder

pytestmark = pytest.mark.model

TINY = Path(settings.BASE_DIR) / "fixtures" / "bench" / "scifact_tiny"


def test_bench_encoder_writes_every_runtime_beside_torch(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert encoder.main(["--data", str(TINY), "--size", "8", "--queries", "3", "--threads", "1",
                         "--out", str(tmp_path)]) == 0
    written = json.loads((tmp_path / "encoder.json").read_text())
    runtimes = written["runtimes"]
    assert list(runtimes) == ["torch", "onnx", "onnx-int8"]
    assert written["meta"]["corpus_texts"] == 8 and written["meta"]["queries"] == 3
    for name, figures in runtimes.items():
        for key in ("records_per_second", "query_ms_p50", "query_ms_p95", "peak_rss_mib", "load_seconds"):
            assert math.isfinite(figures[key]) and figures[key] > 0, (name, key)
    for name in ("onnx", "onnx-int8"):
        figures = runtimes[name]
        for key in ("throughput_vs_torch", "query_p50_speedup_vs_torch", "peak_rss_vs_torch"):
            assert math.isfinite(figures[key]) and figures[key] > 0, (name, key)
        for part, count in (("corpus_cosine", 8), ("query_cosine", 3)):
            stats = figures[part]
            assert stats["count"] == count
            assert -1 <= stats["min"] <= stats["p1"] <= stats["p50"] <= 1.0001
    table = (tmp_path / "encoder.md").read_text()
    assert all(f"| {name} |" in table for name in runtimes)
