"""Smoke test of ``bench/lexical.py`` through ``python -m bench``: both tiny synthetic corpora
(word list and Zipf), two passes; it checks what the run writes (each measure beside its full
scan and tantivy, agreement, overlap, both builds), never the figures themselves, and that the
bench database, its build info and tantivy's indexes are gone after."""
import json
import math
import uuid

import pytest
from django.db import connection

from bench.search_setup import CACHE

from bench.runner import run as run_bench

pytestmark = pytest.mark.django_db(transaction=True)


def positive(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def test_lexical_bench_on_a_tiny_corpus(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_PROGRESS", "0")
    database = f"memseek_smoke_lexical_{uuid.uuid4().hex[:10]}"
    test_database = connection.settings_dict["NAME"]
    run_bench("lexical", "--size", 300, "--corpus", "wordlist", "--corpus", "zipf", "--no-scifact",
              "--queries", 4, "--iterations", 2, "--database", database, "--drop", "--out", tmp_path)

    result = json.loads((tmp_path / "lexical.json").read_text())
    assert result["environment"]["git"]["commit"]
    assert [corpus["name"] for corpus in result["corpora"]] == ["synthetic-300", "zipf-300"]
    report = (tmp_path / "lexical.md").read_text()
    for corpus in result["corpora"]:
        build = corpus["build"]
        assert build["records"] == 300 and 0 < build["visible"] <= 300 and build["postings"] > build["visible"]
        assert positive(build["index_build_s"]) and positive(build["index_bytes"])
        peer = build["tantivy"]
        assert peer["documents"] == build["visible"] and peer["segments"] >= 1
        assert positive(peer["build_s"]) and positive(peer["bytes"])
        assert [row["scope"] for row in corpus["rows"]] == ["workspace", "entity"]
        for row in corpus["rows"]:
            assert row["queries"] == 4 and row["agreed"] == 4
            assert positive(row["index"]["p50_ms"]) and positive(row["full_scan"]["p50_ms"])
            assert positive(row["speedup_p50"]) and positive(row["vs_tantivy_p50"]) and positive(row["vs_tantivy_p95"])
            for label in ("index", "tantivy"):
                assert row[f"{label}_cold"]["n"] == row[label]["n"] == 4 and positive(row[f"{label}_cold"]["p50_ms"])
            assert row["full_scan"]["n"] == 8
            assert 0 < row["tantivy_overlap"] <= 1 and 0 <= row["tantivy_identical"] <= 4
        assert report.count(f"| {corpus['name']} | 300 | workspace |") == 2  # the scan's table and tantivy's

    assert connection.settings_dict["NAME"] == test_database
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_database WHERE datname = %s", [database])
        assert cursor.fetchone()[0] == 0
    assert not list(CACHE.glob(f"build-{database}-*.json")) and not list(CACHE.glob(f"tantivy-{database}-*"))
