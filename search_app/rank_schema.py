"""``GET /rank/schema``: the ranking contract of a workspace, for tooling and diagnostics."""
from __future__ import annotations

from catalog_app.bm25_formula import B, IDF_FORMULA, K1, SCORE_FORMULA
from catalog_app.catalog.registry import BUILTIN_SOURCE
from catalog_app.catalog.runtime import catalog_for_workspace
from catalog_app.en_terms import EN_STOPWORDS, STEMMER
from memseek_site.conf import memseek_setting

from .catalog_families import BUILTIN_RANK_WARNING
from .engine.profiles import BACKEND_CAPABILITIES, all_profiles
from .engine.rank_expression import rank_to_json
from .engine.rank_grammar import RANK_GRAMMAR

RESULT_SCORES = {"rank_field": "rank", "score_field": "score", "native_score_field": "rank_score",
                 "score_range": [0.0, 1.0], "score_semantics": "query_relative", "normalization": "min_max",
                 "normalization_scope": "ranked_candidates", "calibrated": False,
                 "structured_results_are_scored": False}


def rank_schema(*, workspace) -> dict:
    from .engine.spec_schema import SEARCH_SPEC_SCHEMA

    catalog = catalog_for_workspace(workspace)
    defaults = catalog.get("rank_default", "rank_default")
    builtin = defaults.source_file == BUILTIN_SOURCE
    bindings = {}
    for name in catalog.names("collection"):
        active = catalog.value("collection", name)
        if active is not None:
            bindings[name] = active.search_profile
    return {
        "rank": RANK_GRAMMAR,
        "result_scores": RESULT_SCORES,
        "search_spec": SEARCH_SPEC_SCHEMA,
        "rank_hash": defaults.hash,
        "default_source": "builtin" if builtin else "catalog",
        "default_warning": BUILTIN_RANK_WARNING if builtin else None,
        "default_candidates": defaults.value.candidates,
        "variants": {mode: rank_to_json(node) for mode, node in defaults.value.variants.items()},
        "profiles": {name: {"backend": p.backend, "layout": p.layout, "consistency": p.consistency, "usable": p.usable}
                     for name, p in sorted(all_profiles(catalog).items())},
        "bindings": bindings,
        "backends": {name: list(capabilities) for name, capabilities in BACKEND_CAPABILITIES.items()},
        "ranking": ranking_catalog(),
    }


def ranking_catalog() -> dict:
    """The immutable ranking profiles (lexical-search.md ``bm25_v1``; ``en_v1``, the stemmed
    English terms the ``bm25_en`` signal scores) beside this server's execution capacity for
    ``bm25_v1``: the scan ceilings and concurrent retrieval slots (operator settings, not part of
    the profile)."""
    return {"en_v1": {
        "signal": "bm25_en",
        "route": "the bm25_en rank signal (POST /search, views, sources of a fused search)",
        "tokens": "lowercased, split into runs of two or more word characters (regular expression "
                  "(?u)\\b\\w\\w+\\b, so one-character tokens are dropped and _ joins words), stopwords "
                  "removed, each token stemmed by Snowball's english stemmer; length counts the tokens left; "
                  "query terms deduplicated; record text only, never metadata",
        "stopwords": sorted(EN_STOPWORDS), "stemmer": f"Snowball {STEMMER} (PyStemmer)",
        "k1": K1, "b": B, "idf": IDF_FORMULA, "score": SCORE_FORMULA,
        "ties": "ascending record UUID",
    }, "bm25_v1": {
        "route": "POST /search/lexical",
        "tokens": "split on every non-alphanumeric Unicode character, lowercased; no stemming, stopwords or "
                  "Unicode normalisation; query terms deduplicated; record text only, never metadata",
        "k1": K1, "b": B, "idf": IDF_FORMULA, "score": SCORE_FORMULA,
        "ties": "ascending record UUID",
        "capacity": {"scan_records_max": memseek_setting("LEXICAL_SCAN_ROWS_MAX"),
                     "scan_bytes_max": memseek_setting("LEXICAL_SCAN_BYTES_MAX"),
                     "retrieval_slots": memseek_setting("LEXICAL_RETRIEVAL_SLOTS")},
    }}
