"""Smoke test of ``bench/lexical.py`` through ``manage.py bench``: a tiny synthetic corpus, one
pass; it checks what the run writes (each measure beside its full scan, agreement, the build),
never the figures themselves, and that the bench database and its build info are gone after."""
import json
import math
import uuid

import pytest
from django.core.management import call_command
from django.db import connection

from bench.search_setup import CACHE

pytestmark = pytest.mark.django_db(transaction=True)


def positive(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def test_lexical_bench_on_a_tiny_corpus(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_PROGRESS", "0")
    database = f"memseek_smoke_lexical_{uuid.uuid4().hex[:10]}"
    test_database = connection.settings_dict["NAME"]
    call_command("bench", "lexical", "--size", 300, "--no-scifact", "--queries", 4, "--iterations", 2,
                 "--database", database, "--drop", "--out", tmp_path)

    result = json.loads((tmp_path / "lexical.json").read_text())
    assert result["environment"]["git"]["commit"]
    (corpus,) = result["corpora"]
    assert corpus["name"] == "synthetic-300"
    build = corpus["build"]
    assert build["records"] == 300 and 0 < build["visible"] <= 300 and build["postings"] > build["visible"]
    assert positive(build["index_build_s"]) and positive(build["index_bytes"])
    assert [row["scope"] for row in corpus["rows"]] == ["workspace", "entity"]
    for row in corpus["rows"]:
        assert row["queries"] == 4 and row["agreed"] == 4
        assert positive(row["index"]["p50_ms"]) and positive(row["full_scan"]["p50_ms"])
        assert positive(row["speedup_p50"])
        assert row["index_cold"]["n"] == row["index"]["n"] == 4 and positive(row["index_cold"]["p50_ms"])
        assert row["full_scan"]["n"] == 8
    assert "| synthetic-300 | 300 | workspace |" in (tmp_path / "lexical.md").read_text()

    assert connection.settings_dict["NAME"] == test_database
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_database WHERE datname = %s", [database])
        assert cursor.fetchone()[0] == 0
    assert not list(CACHE.glob(f"build-{database}-*.json"))
