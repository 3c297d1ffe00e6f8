"""``GET /rank/schema`` (reference 3.5) and ``conf/rank_default.yaml`` loading (reference 4.4,
7.2 item 44): the grammar, the public score contract, the SearchSpec schema, the active rank
defaults and their hash, profiles, bindings and backend capabilities.
"""
from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from catalog_app.catalog.errors import CatalogInvalid
from catalog_app.catalog.hashing import definition_hash
from catalog_app.models import Definition, Workspace
from catalog_app.services.catalog_load import catalog_load
from search_app.catalog_families import BUILTIN_RANK_WARNING, default_rank_body
from search_app.engine.rank_grammar import RANK_GRAMMAR
from tests.conftest import EXAMPLE_CATALOG

RANK_FILE = "conf/rank_default.yaml"
KEYS = ["rank", "result_scores", "search_spec", "rank_hash", "default_source", "default_warning",
        "default_candidates", "variants", "profiles", "bindings", "backends", "ranking"]
RESULT_SCORES = {"rank_field": "rank", "score_field": "score", "native_score_field": "rank_score",
                 "score_range": [0.0, 1.0], "score_semantics": "query_relative", "normalization": "min_max",
                 "normalization_scope": "ranked_candidates", "calibrated": False,
                 "structured_results_are_scored": False}
DECAY_24 = ["decay", ["age_hours", "last_accessed"], {"midpoint": 24.0, "exponent": 1.0}]
# The built-in defaults (views-and-search.md "Rank expressions"), as the route serialises them.
BUILT_IN_VARIANTS = {
    "hybrid": ["sum", [["product", 1.0, ["normalize", ["max", [["similarity"], ["text_match"]]]]],
                       ["product", 1.0, DECAY_24]]],
    "vector": ["sum", [["product", 1.0, ["normalize", ["similarity"]]], ["product", 1.0, DECAY_24]]],
    "text": ["sum", [["product", 1.0, ["normalize", ["text_match"]]], ["product", 1.0, DECAY_24]]],
    "recent": ["decay", ["age_hours", "occurred_at"], {"midpoint": 24.0, "exponent": 1.0}],
}
BUILT_IN_HASH = definition_hash(default_rank_body())
# What fixtures/catalogs/example publishes: hybrid fuses exact BM25 and similarity (and a little
# ts_rank_cd) with a small recency term, chosen on the quality benches' tuning splits; the other
# modes are built in.
EXAMPLE_HYBRID = ["sum", [["product", 0.3, ["normalize", ["bm25"]]], ["product", 0.1, ["normalize", ["text_match"]]],
                          ["product", 0.6, ["normalize", ["similarity"]]], ["product", 0.1, DECAY_24]]]
EXAMPLE_VARIANTS = {**BUILT_IN_VARIANTS, "hybrid": EXAMPLE_HYBRID}

# The reference catalog's shape: the default formulas plus N(importance) as a third term.
WITH_IMPORTANCE = """
candidates: 300
variants:
  hybrid: [sum, [[normalize, [max, [[similarity], [text_match]]]], {decay}, [normalize, [score, importance]]]]
  vector: [sum, [[normalize, [similarity]], {decay}, [normalize, [score, importance]]]]
  text: [sum, [[normalize, [text_match]], {decay}, [normalize, [score, importance]]]]
  recent: [sum, [[decay, [age_hours, occurred_at], {midpoint: 24, exponent: 1}], [normalize, [score, importance]]]]
""".replace("{decay}", "[decay, [age_hours, last_accessed], {midpoint: 24, exponent: 1}]")


def catalog_dir(tmp_path: Path, files: dict[str, str]) -> Path:
    directory = tmp_path / "catalog"
    shutil.copytree(EXAMPLE_CATALOG, directory)
    for relative, text in files.items():
        (directory / relative).parent.mkdir(parents=True, exist_ok=True)
        (directory / relative).write_text(textwrap.dedent(text))
    return directory


def rank_schema(api) -> dict:
    response = api.get("/rank/schema")
    assert response.status_code == 200, response.json()
    return response.json()


def test_rank_schema_of_the_example_catalog(api, catalog):
    payload = rank_schema(api)
    assert list(payload) == KEYS
    assert payload["rank"] == RANK_GRAMMAR
    Draft202012Validator.check_schema(payload["rank"])
    assert payload["result_scores"] == RESULT_SCORES
    stored = Definition.objects.get(workspace=catalog, family="rank_default", active=True)
    assert (stored.source_file, payload["rank_hash"]) == (RANK_FILE, stored.hash)
    assert payload["rank_hash"] != BUILT_IN_HASH
    assert (payload["default_source"], payload["default_warning"]) == ("catalog", None)
    assert payload["default_candidates"] == 200
    assert payload["variants"] == EXAMPLE_VARIANTS
    assert payload["profiles"] == {"pg_default": {"backend": "pg", "layout": None, "consistency": None,
                                                  "usable": True}}
    assert payload["bindings"] == {"dependencies": "pg_default", "main": "pg_default", "outcomes": "pg_default",
                                   "profiles": "pg_default", "tickets": "pg_default"}
    assert payload["backends"] == {"pg": ["vector", "text", "recent", "structured"]}


def test_search_spec_is_a_draft_2020_12_schema_that_judges_requests(api, catalog):
    schema = rank_schema(api)["search_spec"]
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    assert validator.is_valid({"q": "renewal", "mode": "hybrid", "scope": {"collections": ["main"]}, "k": 5})
    assert not validator.is_valid({"q": "renewal", "mode": "hybrid", "scope": {"colections": ["main"]}})
    assert not validator.is_valid({"q": "renewal", "mode": "sideways"})


def test_rank_schema_without_a_catalog_serves_the_built_in_defaults(api, workspace):
    payload = rank_schema(api)
    assert (payload["rank_hash"], payload["default_candidates"]) == (BUILT_IN_HASH, 200)
    assert payload["variants"] == BUILT_IN_VARIANTS
    assert payload["bindings"] == {}
    assert (payload["default_source"], payload["default_warning"]) == ("builtin", BUILTIN_RANK_WARNING)


def test_a_catalog_without_a_rank_default_says_the_built_in_formula_ranks(api, workspace, tmp_path):
    directory = catalog_dir(tmp_path, {})
    (directory / RANK_FILE).unlink()
    catalog_load(workspace=workspace, directory=directory)
    payload = rank_schema(api)
    assert payload["bindings"]["main"] == "pg_default"
    assert (payload["default_source"], payload["rank_hash"]) == ("builtin", BUILT_IN_HASH)
    assert "built-in formula" in payload["default_warning"] and RANK_FILE in payload["default_warning"]


def test_rank_schema_rejects_unknown_query_parameters(api, catalog):
    response = api.get("/rank/schema?mode=text")
    assert response.status_code == 422
    assert (response.json()["error"], response.json()["path"]) == ("request_schema", "mode")


def test_a_catalog_rank_default_replaces_the_built_in_one(api, catalog, tmp_path):
    catalog_load(workspace=catalog, directory=catalog_dir(tmp_path, {RANK_FILE: WITH_IMPORTANCE}))
    payload = rank_schema(api)
    stored = Definition.objects.get(workspace=catalog, family="rank_default", active=True)
    assert stored.source_file == RANK_FILE
    assert payload["rank_hash"] == stored.hash != BUILT_IN_HASH
    assert payload["default_candidates"] == 300
    importance = ["normalize", ["score", "importance"]]
    assert payload["variants"]["text"] == ["sum", [["normalize", ["text_match"]], DECAY_24, importance]]
    assert payload["variants"]["recent"] == ["sum", [["decay", ["age_hours", "occurred_at"],
                                                      {"midpoint": 24.0, "exponent": 1.0}], importance]]
    assert set(payload["variants"]) == {"hybrid", "vector", "text", "recent"}


def test_a_catalog_copy_of_the_built_in_default_hashes_identically(api, catalog, tmp_path):
    # The file writes product weights as 1 where the built-in body has 1.0, and the stored body
    # is normalised (24 -> 24.0): semantically equal numbers hash identically (reference 7.2 #44).
    decay = "[decay, [age_hours, last_accessed], {midpoint: 24, exponent: 1}]"
    relevance = "[product, 1, [normalize, [max, [[similarity], [text_match]]]]]"
    text = (f"candidates: 200\nvariants:\n"
            f"  hybrid: [sum, [{relevance}, [product, 1, {decay}]]]\n"
            f"  vector: [sum, [[product, 1, [normalize, [similarity]]], [product, 1, {decay}]]]\n"
            f"  text: [sum, [[product, 1, [normalize, [text_match]]], [product, 1, {decay}]]]\n"
            "  recent: [decay, [age_hours, occurred_at], {midpoint: 24, exponent: 1}]\n")
    catalog_load(workspace=catalog, directory=catalog_dir(tmp_path, {RANK_FILE: text}))
    payload = rank_schema(api)
    assert payload["rank_hash"] == BUILT_IN_HASH
    assert payload["variants"] == BUILT_IN_VARIANTS
    # Written down on purpose, so not "met by accident": no warning.
    assert (payload["default_source"], payload["default_warning"]) == ("catalog", None)


def test_profiles_and_bindings_include_loaded_profiles(api, catalog, tmp_path):
    catalog_load(workspace=catalog, directory=catalog_dir(tmp_path, {
        "conf/search_profiles.yaml": "profiles:\n  remote: {backend: turbopuffer, layout: shared}\n",
        "collections/remote.yaml": """
            collections:
              - name: remote
                version: 1
                active: true
                mode: event
                schema: {type: object, required: [text], properties: {text: {type: string}}}
                search_profile: remote
        """}))
    payload = rank_schema(api)
    assert payload["profiles"]["remote"] == {"backend": "turbopuffer", "layout": "shared", "consistency": None,
                                             "usable": False}
    assert payload["profiles"]["pg_default"]["usable"] is True
    assert payload["bindings"]["remote"] == "remote"
    assert payload["backends"] == {"pg": ["vector", "text", "recent", "structured"]}


@pytest.mark.parametrize(("text", "path"), [
    ("candidates: 200\nvariants:\n  hybrid: [similarity]\n  vector: [similarity]\n  text: [text_match]\n",
     "variants.recent"),
    ("candidates: 200\nvariants:\n  hybrid: [similarity]\n  vector: [similarity]\n  text: [similarity]\n"
     "  recent: [age_hours, occurred_at]\n", "variants.text"),
    ("candidates: 200\nvariants:\n  hybrid: [similarity]\n  vector: [similarity]\n  text: [bogus]\n"
     "  recent: [age_hours, occurred_at]\n", "variants.text[0]"),
    ("candidates: 200\nvariants:\n  hybrid: [score, urgency]\n  vector: [similarity]\n  text: [text_match]\n"
     "  recent: [age_hours, occurred_at]\n", "variants.hybrid[1]"),
    ("candidates: 0\nvariants:\n  hybrid: [similarity]\n  vector: [similarity]\n  text: [text_match]\n"
     "  recent: [age_hours, occurred_at]\n", "candidates"),
    ("variants:\n  hybrid: [similarity]\n  vector: [similarity]\n  text: [text_match]\n"
     "  recent: [age_hours, occurred_at]\n", "candidates"),
], ids=["missing_variant", "similarity_in_text", "unknown_operator", "unknown_score", "zero_candidates",
        "missing_candidates"])
def test_a_broken_rank_default_fails_to_load_with_its_path(api, catalog, tmp_path, text, path):
    rows = Definition.objects.filter(workspace=catalog).count()
    revision = Workspace.objects.get(pk=catalog.pk).catalog_revision
    active = rank_schema(api)["rank_hash"]
    with pytest.raises(CatalogInvalid) as failure:
        catalog_load(workspace=catalog, directory=catalog_dir(tmp_path, {RANK_FILE: text}))
    assert [(issue.file, issue.path, issue.code) for issue in failure.value.issues] == [(RANK_FILE, path, "schema")]
    assert Definition.objects.filter(workspace=catalog).count() == rows
    assert Workspace.objects.get(pk=catalog.pk).catalog_revision == revision
    assert rank_schema(api)["rank_hash"] == active


def test_the_ranking_catalog_publishes_bm25_v1_and_the_configured_capacity(api, catalog, settings):
    settings.MEMSEEK = {"LEXICAL_SCAN_ROWS_MAX": 500, "LEXICAL_SCAN_BYTES_MAX": 4096, "LEXICAL_RETRIEVAL_SLOTS": 3}
    bm25 = rank_schema(api)["ranking"]["bm25_v1"]
    assert (bm25["k1"], bm25["b"]) == (1.2, 0.75)
    assert bm25["idf"] == "idf(term) = ln(1 + (N - df(term) + 0.5) / (df(term) + 0.5))"
    assert bm25["capacity"] == {"scan_records_max": 500, "scan_bytes_max": 4096, "retrieval_slots": 3}
    assert bm25["route"] == "POST /search/lexical" and bm25["ties"] == "ascending record UUID"


@pytest.mark.model
def test_get_search_ranks_with_the_example_catalogs_hybrid_default(api, catalog, settings):
    from tests.search_app.search_factories import ingest_ready, item

    settings.MEMSEEK = {"TOUCH_ON_READ": False}
    ingest_ready(catalog, [item("Maria confirmed the Q3 budget"), item("The Q3 budget review moved to Friday"),
                           item("Budget budget budget: the offsite plan"), item("Replace the bicycle chain"),
                           item("My cat sleeps on the warm windowsill")])
    got = api.get("/search?q=q3 budget review&collection=main")
    assert got.status_code == 200, got.json()

    def posted(rank: list) -> list:
        body = {"q": "q3 budget review", "mode": "hybrid", "scope": {"collections": ["main"]}, "rank": rank}
        response = api.post("/search", body, format="json")
        assert response.status_code == 200, response.json()
        return [(hit["id"], hit["rank_score"]) for hit in response.json()["hits"]]

    def same(a: list, b: list) -> bool:  # the recency term moves with the clock (0.1 / 24 an hour)
        return [i for i, _ in a] == [i for i, _ in b] and all(abs(x - y) < 1e-4 for (_, x), (_, y) in zip(a, b))

    hits = [(hit["id"], hit["rank_score"]) for hit in got.json()["hits"]]
    assert len(hits) == 5
    assert same(hits, posted(EXAMPLE_HYBRID))
    assert not same(hits, posted(BUILT_IN_VARIANTS["hybrid"]))
