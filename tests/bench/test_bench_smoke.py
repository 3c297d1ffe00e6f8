"""Smoke tests of the performance benchmarks (``bench/ingest.py``, ``bench/search.py``,
``bench/retrieve.py``): each runs end to end through ``python -m bench`` on a tiny corpus with the
fewest iterations, queries, clients and seconds it takes, and leaves nothing behind. They check
what a run writes (every measure beside its baseline as a finite positive ratio, the targets, the
environment), never the figures themselves."""
import json
import math
import uuid

import pytest
from django.db import connection

from catalog_app.models import Workspace
from bench.runner import run as run_bench

pytestmark = [pytest.mark.model, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _one_torch_thread(monkeypatch):
    """Quiet progress, and one torch intra-op thread here and in every process a script starts:
    on a busy 2-core machine a pool of two spin-waits and each embedding takes ten times longer."""
    import torch

    monkeypatch.setenv("BENCH_PROGRESS", "0")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def vector_cache(tmp_path_factory):
    """One cache of corpus vectors for the search and retrieve runs (the same corpus)."""
    return tmp_path_factory.mktemp("bench-cache")


@pytest.fixture
def database_prefix():
    """A unique prefix for the corpus databases of one run; afterwards none of them is left and
    this test's connection is back on the test database."""
    prefix = f"memseek_smoke_{uuid.uuid4().hex[:10]}"
    test_database = connection.settings_dict["NAME"]
    yield prefix
    assert connection.settings_dict["NAME"] == test_database
    with connection.cursor() as cursor:
        cursor.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", [prefix + "%"])
        left = [row[0] for row in cursor.fetchall()]
        for name in left:  # not to keep them after a failed run
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    assert left == []


def positive(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def assert_latency(summary: dict) -> None:
    assert summary["n"] > 0
    assert all(positive(summary[key]) for key in ("p50_ms", "p95_ms", "p99_ms", "mean_ms")), summary


def assert_environment(result: dict) -> None:
    environment = result["environment"]
    assert environment["machine"]["cores"] > 0 and environment["machine"]["load_average_at_start"]
    versions = environment["versions"]
    assert versions["python"] and versions["django"] and versions["postgres_server"] and versions["torch"]
    assert environment["git"]["commit"]


def test_ingest_bench_on_a_tiny_corpus(tmp_path):
    # ready_worker is left out: starting a Celery worker that loads the model would add about as
    # much again as the rest of the run.
    run_bench("ingest", "--records", 100, "--ready-records", 20, "--warm-records", 5,
              "--measures", "api,ready", "--out", tmp_path)

    result = json.loads((tmp_path / "ingest.json").read_text())
    assert_environment(result)
    rows = result["table"]
    # API: beside one INSERT per row (the target's baseline) and one multi-row INSERT; ready:
    # beside the faster encode form (the target's baseline) and the two others.
    assert [row["measure"].split(":")[0].split(" (")[0] for row in rows] == (
        ["API ingest"] * 2 + ["Ingest-to-ready with embeddings"] * 3)
    for row in rows:
        assert all(positive(row[key]) for key in ("seconds", "records_per_s", "baseline_seconds",
                                                  "baseline_records_per_s", "ratio")), row
        assert row["ratio"] == pytest.approx(row["records_per_s"] / row["baseline_records_per_s"])
    assert [row["target"] for row in rows] == [0.5, None, 0.8, None, None]
    assert [row["records"] for row in rows] == [100, 100, 20, 20, 20]
    assert result["api"]["rows_per_workspace"] == 105 and result["ready"]["embeddings_ok"] == 20
    report = (tmp_path / "ingest.md").read_text()
    assert report.startswith("# Ingest benchmark")
    assert report.count("| API ingest") == 2 and report.count("| Ingest-to-ready") == 3
    assert "≥ 0.50" in report and "≥ 0.80" in report and "- Versions: Python" in report
    assert not Workspace.objects.filter(name__startswith="bench-").exists()


def test_ingest_bench_measures_the_api_beside_a_celery_worker(tmp_path):
    # The deployment's form: the server has a broker, so the lexical compaction a write enqueues
    # goes to the worker instead of running inside the request.
    run_bench("ingest", "--records", 100, "--warm-records", 5, "--measures", "api_worker",
              "--worker-concurrency", 1, "--out", tmp_path)

    result = json.loads((tmp_path / "ingest.json").read_text())
    assert "worker_skipped" not in result, result.get("worker_skipped")  # CI runs Redis
    assert "api" not in result and result["api_worker"]["rows_per_workspace"] == 105
    rows = result["table"]
    assert [row["measure"] for row in rows] == [
        "API ingest: POST /records, batches of 100, no processors, compaction on a Celery worker"] * 2
    assert [row["target"] for row in rows] == [0.5, None] and all(positive(row["ratio"]) for row in rows)
    assert "- API batch latency (compaction on a Celery worker):" in (tmp_path / "ingest.md").read_text()
    assert not Workspace.objects.filter(name__startswith="bench-").exists()


def test_search_bench_on_a_tiny_corpus(tmp_path, vector_cache, database_prefix):
    run_bench("search", "--size", 100, "--queries", 5, "--iterations", 1, "--clients", 1,
              "--throughput-seconds", 0.5, "--warmup-seconds", 1, "--workers", 1, "--skip", "one-thread",
              "--database-prefix", database_prefix, "--cache", vector_cache, "--drop", "--out", tmp_path)

    result = json.loads((tmp_path / "search.json").read_text())
    assert_environment(result)
    out = result["sizes"]["100"]
    assert out["build"]["records"] == 100 and out["queries"] == 5 and out["vector_cache_misses"] == 0
    names = [entry["name"] for entry in out["searches"] + out["multi"] + out["graph"]]
    assert names == ["hybrid", "vector", "text", "structured", "2 sources (RRF)", "4 sources (RRF)",
                     "view events_and_facts (2 sources)", "view bm25_and_vector (fused, workspace-wide)",
                     "graph depth 1", "graph depth 2", "graph depth 3", "graph depth 4"]
    for entry in out["searches"] + out["multi"] + out["graph"]:
        assert_latency(entry["service"])
        assert_latency(entry["service_warm"])
        assert_latency(entry["baseline"])
        assert positive(entry["ratio_p50"]) and positive(entry["ratio_p95"]), entry["name"]
        assert entry["baseline_agrees"] == "5/5", entry["name"]
    assert [target["target"] for target in out["targets"]] == ["hybrid p50 ≤ 1.5× its raw SQL",
                                                               "hybrid p50 ≤ 30 ms (warm)",
                                                               "fused BM25 + vector view p50 ≤ 40 ms (warm)"]
    assert all(positive(target["value"]) and not target["binding"] for target in out["targets"])
    fused = out["stages"]["view bm25_and_vector"]["stages"]  # the view's sources, summed over their threads
    assert positive(fused["candidate SQL"]["mean_ms"]) and positive(fused["reload SQL"]["mean_ms"])
    for channel in ("bm25", "text", "vector"):
        assert positive(fused[f"candidate SQL: channel {channel}"]["mean_ms"]), channel
    assert fused["candidate SQL: channel bm25"]["nested_in"] == "candidate SQL"
    (round_,) = out["throughput"]["rounds"]
    assert round_["clients"] == 1 and round_["search"]["errors"] == 0 and round_["health"]["errors"] == 0
    assert positive(round_["search"]["requests_per_s"]) and positive(round_["ratio_rps"])
    assert positive(out["throughput"]["memory"]["ratio"])
    report = (tmp_path / "search.md").read_text()
    assert report.startswith("# Search benchmark") and "## 100 records" in report
    assert "- hybrid p50 ≤ 1.5× its raw SQL:" in report and "- hybrid p50 ≤ 30 ms (warm):" in report
    assert "- Versions: Python" in report
    assert (tmp_path / "search.png").stat().st_size > 0
    assert list(vector_cache.glob("build-*")) == []


def test_retrieve_bench_on_a_tiny_corpus(tmp_path, vector_cache, database_prefix):
    run_bench("retrieve", "--size", 100, "--queries", 5, "--iterations", 1,
              "--database-prefix", database_prefix, "--cache", vector_cache, "--drop", "--out", tmp_path)

    result = json.loads((tmp_path / "retrieve.json").read_text())
    assert_environment(result)
    out = result["sizes"]["100"]
    assert out["prepared"]["policy_records"] == 5 and out["queries"] == 5 and out["vector_cache_misses"] == 0
    latency = out["latency"]
    for name in ("retrieve", "hybrid", "legs_sql"):
        assert_latency(latency[name])
    for key in ("ratio_p50_hybrid", "ratio_p95_hybrid", "ratio_p50_legs_sql", "ratio_p95_legs_sql"):
        assert positive(latency[key]), key
    agreeing, replayed = latency["legs_sql_agrees"].split("/")
    assert agreeing == replayed and int(replayed) > 0
    stages = out["stages"]["stages"]
    assert positive(out["stages"]["total_mean_ms"])
    assert positive(stages["legs phase 1 (vector, text, policies)"]["mean_ms"])
    assert out["receipts_deleted"] == 5 * 3 + 1  # warm-up, the timed pass, explain, EXPLAIN's own call
    report = (tmp_path / "retrieve.md").read_text()
    assert report.startswith("# Context retrieval benchmark") and "## 100 records" in report
    assert "| `POST /retrieve` service |" in report and "| baseline: hybrid `POST /search` service" in report
    assert "- Versions: Python" in report
    assert (tmp_path / "retrieve.png").stat().st_size > 0
    assert list(vector_cache.glob("build-*")) == []
