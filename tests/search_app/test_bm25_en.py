"""The ``bm25_en`` rank signal: exact BM25 over the stemmed English terms of ``en_v1`` over a
search's own scope, equal to bm25s (same stemmer, stopwords, Lucene idf, k1 1.2, b 0.75, times
its missing ``k1 + 1``) on the index path and the scan path, in text and hybrid mode and as a
fused search's source; refused where it cannot be computed."""
import bm25s
import numpy as np
import pytest
import Stemmer

from catalog_app.services.record_ingest import record_ingest_batch
from search_app.rank_schema import ranking_catalog

CORPUS = [
    "Retrying the payments failed twice in the payment worker",
    "Payment retries are failing after the deploy; the retry budget is exhausted",
    "Quarterly planning notes for the payments team",
    "Unrelated: lunch menu for Friday",
    "The runners ran; running is what a runner runs",
]
QUERY = "retry failing payment runs"


def _bm25s_scores(query: str, texts: list[str]) -> list[float]:
    """bm25s over ``texts`` (stemmed, ``en`` stopwords, Lucene, float64) times 2.2: the reference."""
    stemmer = Stemmer.Stemmer("english")
    corpus = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
    retriever = bm25s.BM25(method="lucene", k1=1.2, b=0.75, dtype="float64")
    retriever.index(corpus, show_progress=False)
    query_tokens = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False)[0]
    ids = [corpus.vocab[term] for term in dict.fromkeys(query_tokens) if term in corpus.vocab]
    return list(np.asarray(retriever.get_scores(ids)) * 2.2)


def _hits(api, workspace, mode: str, *, entities: list[str] | None) -> list[dict]:
    """CORPUS under entity ``ops``, one more record under ``elsewhere``; searched in ``mode``
    ranked by [bm25_en], scoped to ``entities`` (the scan path) or to the collection (the index)."""
    items = [{"entity": "ops", "collection": "outcomes", "type": "note", "text": text, "scores": {"confidence": 1}}
             for text in CORPUS]
    items.append({"entity": "elsewhere", "collection": "outcomes", "type": "note", "text": "Retries, retries.",
                  "scores": {"confidence": 1}})
    record_ingest_batch(workspace=workspace, items=items)
    scope = {"collections": ["outcomes"], **({"entities": entities} if entities else {})}
    response = api.post("/search", {"q": QUERY, "mode": mode, "rank": ["bm25_en"], "k": 10, "include": ["text"],
                                    "scope": scope}, format="json")
    assert response.status_code == 200, response.json()
    return response.json()["hits"]


@pytest.mark.parametrize("entities", [["ops"], None], ids=["scan", "index"])
def test_bm25_en_equals_bm25s_over_the_search_scope(api, catalog, workspace, entities):
    hits = _hits(api, workspace, "text", entities=entities)
    texts = CORPUS if entities else [*CORPUS, "Retries, retries."]
    expected = dict(zip(texts, _bm25s_scores(QUERY, texts)))
    matching = {text: score for text, score in expected.items() if score > 0}
    assert {hit["text"] for hit in hits} == set(matching)
    for hit in hits:
        assert abs(hit["rank_score"] - matching[hit["text"]]) <= 1e-9
    assert [hit["rank_score"] for hit in hits] == sorted((hit["rank_score"] for hit in hits), reverse=True)


def test_bm25_en_finds_what_bm25_misses_through_stemming(api, catalog, workspace):
    hits = _hits(api, workspace, "text", entities=["ops"])
    # "ran"/"runner" do not stem to "run", but "runs" and "running" do: the last record matches
    assert "The runners ran; running is what a runner runs" in {hit["text"] for hit in hits}
    response = api.post("/search", {"q": "runs", "mode": "text", "rank": ["bm25"], "k": 10, "include": ["text"],
                                    "scope": {"collections": ["outcomes"], "entities": ["ops"]}}, format="json")
    assert [hit["text"] for hit in response.json()["hits"]] == ["The runners ran; running is what a runner runs"]


@pytest.mark.model
def test_bm25_en_in_hybrid_mode_and_beside_bm25(api, catalog, workspace):
    hits = _hits(api, workspace, "hybrid", entities=["ops"])
    expected = dict(zip(CORPUS, _bm25s_scores(QUERY, CORPUS)))
    assert {hit["text"] for hit in hits} == set(CORPUS)  # the recent channel proposes every record
    for hit in hits:
        assert abs(hit["rank_score"] - expected[hit["text"]]) <= 1e-9
    response = api.post("/search", {"q": QUERY, "mode": "text", "k": 10, "include": ["text"],
                                    "rank": ["sum", [["bm25_en"], ["product", 0.0, ["bm25"]]]],
                                    "scope": {"collections": ["outcomes"], "entities": ["ops"]}}, format="json")
    assert response.status_code == 200
    for hit in response.json()["hits"]:
        assert abs(hit["rank_score"] - expected[hit["text"]]) <= 1e-9


def test_bm25_en_ranks_a_fused_searchs_source(api, catalog, workspace):
    _hits(api, workspace, "text", entities=["ops"])
    scope = {"collections": ["outcomes"], "entities": ["ops"]}
    body = api.post("/search", {"q": QUERY, "k": 10, "fuse": {"kind": "rrf"}, "include": ["text"], "sources": [
        {"name": "stemmed", "mode": "text", "scope": scope, "rank": ["bm25_en"], "k": 3},
        {"name": "plain", "mode": "text", "scope": scope, "rank": ["bm25"], "k": 3}]}, format="json").json()
    expected = dict(zip(CORPUS, _bm25s_scores(QUERY, CORPUS)))
    best = max(expected, key=expected.get)
    assert body["ranking"]["kind"] == "rrf"
    (first,) = [hit for hit in body["hits"] if hit["source_ranks"].get("stemmed") == 1]
    assert first["text"] == best  # the stemmed source ranked bm25s's best first


@pytest.mark.parametrize("body,path,message", [
    ({"q": "x", "mode": "vector", "rank": ["bm25_en"]}, "rank", "bm25_en is available only in text and hybrid"),
    ({"q": "x", "mode": "text", "rank": ["bm25_en", 1]}, "rank", "bm25_en takes 0 argument(s)"),
    ({"q": "x", "fuse": {"kind": "rrf"}, "boost": ["bm25_en"], "sources": [{"name": "a", "mode": "text", "k": 2}]},
     "boost", "post-fusion boost"),
])
def test_bm25_en_is_refused_where_it_cannot_be_computed(api, catalog, body, path, message):
    response = api.post("/search", body, format="json")
    assert response.status_code == 422, response.json()
    assert response.json()["path"] == path and message in response.json()["detail"]


def test_the_ranking_catalog_publishes_en_v1():
    en = ranking_catalog()["en_v1"]
    assert en["signal"] == "bm25_en" and (en["k1"], en["b"]) == (1.2, 0.75)
    assert en["stopwords"] == sorted(bm25s.stopwords.STOPWORDS_EN)
    assert "Snowball english" in en["stemmer"]
