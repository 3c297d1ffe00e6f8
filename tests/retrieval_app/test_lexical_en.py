"""``POST /search/lexical`` with ``query.analyzer: en_v1``: the stemmed English profile, scored as
bm25s scores it, the same page from the index and from the scan, its refusals, and the index
left to the scan until every record of the scope has its stored terms."""
import bm25s
import numpy as np
import pytest
import Stemmer

from catalog_app.lexical.backfill import lexical_backfill
from catalog_app.models import Record

from .lexical_factories import body, lexical, load_lexical_catalog, note, write

TEXTS = ["Retrying the payments failed twice", "Payment retries are failing; the retry budget is exhausted",
         "Quarterly planning notes", "The runners ran; running is what a runner runs", "payments, payments"]
QUERY = "retry failing payment runs"


@pytest.fixture
def ws(workspace, tmp_path):
    return load_lexical_catalog(workspace, tmp_path)


def _bm25s(query: str, texts: list[str]) -> np.ndarray:
    stemmer = Stemmer.Stemmer("english")
    corpus = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
    retriever = bm25s.BM25(method="lucene", k1=1.2, b=0.75, dtype="float64")
    retriever.index(corpus, show_progress=False)
    terms = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False)[0]
    return np.asarray(retriever.get_scores([corpus.vocab[t] for t in dict.fromkeys(terms) if t in corpus.vocab])) * 2.2


def test_en_v1_pages_score_as_bm25s_from_the_index_and_the_scan(api, ws, settings):
    ids = write(ws, [note(text) for text in TEXTS])
    expected = _bm25s(QUERY, TEXTS)
    indexed = lexical(api, body(QUERY, {"collections": ["notes"]}, analyzer="en_v1"))
    settings.MEMSEEK = {**settings.MEMSEEK, "LEXICAL_ANALYZERS": "bm25_v1"}  # en_v1 unmaintained: the scan answers
    scanned = lexical(api, body(QUERY, {"collections": ["notes"]}, analyzer="en_v1"))
    assert indexed["page"] == scanned["page"]
    assert indexed["ranking_version"] == "en_v1"
    page = indexed["page"]
    order = [index for index in np.argsort(-expected, kind="stable") if expected[index] > 0]
    assert [hit["record"]["id"] for hit in page["hits"]] == [ids[index] for index in order]
    assert [hit["score"] for hit in page["hits"]] == pytest.approx([expected[i] for i in order], rel=1e-9, abs=0)
    assert (page["matched_records"], page["corpus_records"]) == (len(order), len(TEXTS))
    # bm25_v1 stays the default profile: no stemming, "runs" matches one record only
    plain = lexical(api, body("runs", {"collections": ["notes"]}))
    assert plain["ranking_version"] == "bm25_v1" and [h["record"]["id"] for h in plain["page"]["hits"]] == [ids[3]]


@pytest.mark.parametrize("label,payload,code,path", [
    ("unknown analyzer", body("retry", analyzer="porter"), "lexical_request", "query.analyzer"),
    ("english is not a profile here", body("retry", analyzer="english"), "lexical_request", "query.analyzer"),
    ("analyzer a number", body("retry", analyzer=3), "lexical_request", "query.analyzer"),
    ("analyzer null", body("retry", analyzer=None), "lexical_request", "query.analyzer"),
    ("analyzer with a NUL", body("retry", analyzer="en_v1\x00"), "lexical_request", "query.analyzer"),
    ("analyzer huge", body("retry", analyzer="e" * 100_00), "lexical_request", "query.analyzer"),
    ("stopwords only", body("the a of and", analyzer="en_v1"), "lexical_query_terms", "query.text"),
    ("one-letter words only", body("a b c x y z", analyzer="en_v1"), "lexical_query_terms", "query.text"),
])
def test_en_v1_refusals_are_400_with_code_and_path(api, ws, label, payload, code, path):
    write(ws, [note("retry")])
    error = lexical(api, payload, status=400)
    assert (error["error"], error.get("path")) == (code, path)


def test_records_without_stored_terms_are_answered_by_the_scan_until_the_backfill(api, ws):
    """A record written before ``en_v1`` existed has no stored terms: the index cannot hold it,
    so the route scans (and does not find it) until ``lexical_backfill`` analyses and adds it."""
    old, new = write(ws, [note("running late"), note("runs fine")])
    Record.objects.filter(pk=old).update(en_tf=None, en_length=None)
    before = lexical(api, body("run", {"collections": ["notes"]}, analyzer="en_v1"))["page"]
    assert [hit["record"]["id"] for hit in before["hits"]] == [new] and before["corpus_records"] == 2
    lexical_backfill(workspace_id=ws.pk, batch=10, restart=True)
    after = lexical(api, body("run", {"collections": ["notes"]}, analyzer="en_v1"))["page"]
    assert {hit["record"]["id"] for hit in after["hits"]} == {old, new}
