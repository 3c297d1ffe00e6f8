"""Exact BM25 (lexical-search.md bm25_v1): tokenisation, the formula, and the bm25 rank signal
over a search's own scope, checked against an independent computation."""
import math

import pytest

from catalog_app.bm25_formula import contribution, idf
from catalog_app.bm25_terms import bm25_query_terms, bm25_tokens, term_frequencies
from catalog_app.services.record_ingest import record_ingest_batch

CORPUS = [
    "ZX17 retry failure in the payment worker",
    "Retry storms after the ZX17 deploy; retry budget exhausted",
    "Quarterly planning notes for the payments team",
    "Unrelated: lunch menu for Friday",
]


@pytest.mark.parametrize("text,tokens", [
    ("ZX17 retry-failure", ["zx17", "retry", "failure"]),
    ("snake_case and CamelCase", ["snake", "case", "and", "camelcase"]),
    ("Ünïcode café 3.14", ["ünïcode", "café", "3", "14"]),
    ("...", []),
])
def test_tokens_split_on_non_alphanumerics_and_lowercase_without_stemming(text, tokens):
    assert bm25_tokens(text) == tokens


def test_query_terms_are_deduplicated_in_order():
    assert bm25_query_terms("Retry retry ZX17 retry") == ["retry", "zx17"]


def test_term_frequencies_count_every_token():
    assert term_frequencies("a b a") == ({"a": 2, "b": 1}, 3)


def test_formula_matches_the_page():
    # idf(term) = ln(1 + (N - df + 0.5) / (df + 0.5)); k1 = 1.2, b = 0.75
    assert idf(4, 2) == pytest.approx(math.log(1 + 2.5 / 2.5))
    expected = math.log(2) * 2 * 2.2 / (2 + 1.2 * (0.25 + 0.75 * 6 / 5))
    assert contribution(math.log(2), 2, 6, 5) == pytest.approx(expected)


def _expected_scores(query: str, texts: list[str]) -> list[float]:
    docs = [bm25_tokens(text) for text in texts]
    n, average = len(docs), sum(map(len, docs)) / len(docs)
    scores = []
    for doc in docs:
        total = 0.0
        for term in bm25_query_terms(query):
            df = sum(term in d for d in docs)
            tf = doc.count(term)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            total += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(doc) / average))
        scores.append(total)
    return scores


QUERY = "ZX17 retry failure"


def _bm25_hits(api, workspace, mode: str) -> list[dict]:
    """CORPUS under entity ``ops`` plus one more record elsewhere (outside the scope, so outside
    the statistics), searched in ``mode`` ranked by [bm25]."""
    # outcomes need only a client score, so they are ready at insert and no model is needed
    items = [{"entity": "ops", "collection": "outcomes", "type": "note", "text": text, "scores": {"confidence": 1}}
             for text in CORPUS]
    items.append({"entity": "elsewhere", "collection": "outcomes", "type": "note", "text": "retry retry retry",
                  "scores": {"confidence": 1}})
    record_ingest_batch(workspace=workspace, items=items)
    response = api.post("/search", {"q": QUERY, "mode": mode, "rank": ["bm25"], "k": 10, "include": ["text"],
                                    "scope": {"collections": ["outcomes"], "entities": ["ops"]}}, format="json")
    assert response.status_code == 200, response.json()
    return response.json()["hits"]


def test_bm25_rank_signal_is_exact_over_the_search_scope(api, catalog, workspace):
    hits = _bm25_hits(api, workspace, "text")
    expected = dict(zip(CORPUS, _expected_scores(QUERY, CORPUS)))  # statistics from the scope only
    matching = {text: score for text, score in expected.items() if score > 0}
    assert {hit["text"] for hit in hits} == set(matching)
    for hit in hits:
        assert hit["rank_score"] == pytest.approx(matching[hit["text"]], rel=1e-9)
    assert [hit["rank_score"] for hit in hits] == sorted((hit["rank_score"] for hit in hits), reverse=True)


def test_bm25_is_rejected_outside_text_and_hybrid(api, catalog):
    response = api.post("/search", {"q": "x", "mode": "vector", "rank": ["bm25"]}, format="json")
    assert response.status_code == 422
    assert response.json()["path"] == "rank"


def test_bm25_in_hybrid_mode_scores_with_the_same_scope_statistics(api, catalog, workspace):
    hits = _bm25_hits(api, workspace, "hybrid")
    expected = dict(zip(CORPUS, _expected_scores(QUERY, CORPUS)))
    # the recent channel proposes every record; those sharing no term score 0 and come last
    assert {hit["text"] for hit in hits} == set(CORPUS)
    assert [hit["rank_score"] > 0 for hit in hits] == [True, True, False, False]
    for hit in hits:
        assert hit["rank_score"] == pytest.approx(expected[hit["text"]], rel=1e-9)
    assert [hit["rank_score"] for hit in hits] == sorted((hit["rank_score"] for hit in hits), reverse=True)
