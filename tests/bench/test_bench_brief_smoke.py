"""Smoke test of ``bench brief`` (``bench/brief.py``, ``bench/brief_latency.py``): end to end
through ``python -m bench`` on the tiny LoCoMo file of ``fixtures/bench/`` and a 100-record
latency corpus with the fewest queries and passes. It checks what the run writes and that it
leaves nothing behind, never the figures."""
import json
from pathlib import Path

import pytest

from bench.runner import run as run_bench
from catalog_app.models import Workspace
from tests.bench.test_bench_smoke import _one_torch_thread, assert_environment, assert_latency, database_prefix, \
    positive, vector_cache  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.model, pytest.mark.django_db(transaction=True)]
TINY = Path(__file__).resolve().parents[2] / "fixtures" / "bench" / "locomo_tiny.json"


def test_brief_bench_on_tiny_data(tmp_path, vector_cache, database_prefix):  # noqa: F811
    run_bench("brief", "--data", TINY, "--latency-size", 100, "--queries", 5, "--iterations", 1,
              "--database-prefix", database_prefix, "--cache", vector_cache, "--drop", "--out", tmp_path)

    result = json.loads((tmp_path / "brief.json").read_text())
    assert_environment(result)
    recall = result["recall"]
    assert recall["turns"] == 12 and recall["questions"] == 5 and set(recall["before"]) == {"locomo.conv-tiny"}
    assert set(recall["configurations"]) == {"brief", "search_mix"}
    for entry in recall["configurations"].values():
        for cutoff in ("5", "10"):
            assert 0.0 <= entry["recall"][cutoff]["overall"] <= 100.0
        assert set(entry["recall"]["10"]["categories"]) == {"1 multi-hop", "2 temporal", "3 open-domain",
                                                             "4 single-hop", "5 adversarial"}
    assert recall["target"]["target"] == 72.0 and recall["target"]["dragon"] == 66.2
    latency = result["latency"]["100"]
    assert latency["queries"] == 5 and latency["vector_cache_misses"] == 0
    for name in ("brief", "hybrid_search", "brief_fused_only"):
        assert_latency(latency["latency"][name])
    assert positive(latency["latency"]["ratio_p50"]) and positive(latency["latency"]["neighbours_ratio_p50"])
    report = (tmp_path / "brief.md").read_text()
    assert report.startswith("# POST /memory/search: brief recall and latency")
    assert "| `brief` |" in report and "| `search_mix` |" in report and "## Latency at 100 records" in report
    assert not Workspace.objects.filter(name__startswith="bench-brief-").exists()
    assert list(vector_cache.glob("build-*")) == []


def test_brief_latency_over_word_mean_vectors(tmp_path, vector_cache, database_prefix):  # noqa: F811
    run_bench("brief", "--skip", "recall", "--latency-size", 100, "--vectors", "words", "--queries", 5,
              "--iterations", 1, "--database-prefix", database_prefix, "--cache", vector_cache, "--drop",
              "--out", tmp_path)

    latency = json.loads((tmp_path / "brief.json").read_text())["latency"]["100"]
    assert latency["vectors"] == "words" and latency["build"]["vectors"] == "words"
    assert latency["build"]["embeddings"]["vectors"] == "word means" and latency["build"]["embeddings"]["words"] > 0
    assert latency["queries"] == 5 and latency["vector_cache_misses"] == 0
    assert_latency(latency["latency"]["brief"])
    report = (tmp_path / "brief.md").read_text()
    assert "the mean of MiniLM's vectors of each text's words" in report
    assert list(vector_cache.glob("build-*")) == []


def test_word_mean_vectors_are_unit_means_of_the_words_vectors(vector_cache):
    import numpy as np

    from bench.search_setup import cached_embeddings, default_embedding_config, word_mean_embeddings

    config = default_embedding_config()
    texts = ["budget budget review", "Review, the budget!", "..."]
    matrix, info = word_mean_embeddings(texts, config, "unit-test", cache=vector_cache)
    words, _ = cached_embeddings(["budget", "review", "the"], config, "unit-test-words", cache=vector_cache)
    assert info["words"] == 3 and matrix.shape == (3, config.dimensions)
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
    first = (2 * words[0] + words[1]) / np.linalg.norm(2 * words[0] + words[1])
    second = words.sum(axis=0) / np.linalg.norm(words.sum(axis=0))
    assert np.allclose(matrix[0], first, atol=1e-5) and np.allclose(matrix[1], second, atol=1e-5)
