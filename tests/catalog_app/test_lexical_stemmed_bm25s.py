"""The lexical index's exact BM25 scoring over stemmed English terms equals bm25s on BEIR SciFact.

Issue #38's stemmed signal is exact BM25 over an English analyzer's terms, scored by the same
index machinery as ``bm25_v1`` (``catalog_app.lexical.bm25_topk``: idf, contribution, MaxScore
``top_candidates`` and ``best_k``). This test fixes the terms to bm25s's own English analysis
(PyStemmer's Snowball ``english`` stemmer, bm25s's ``en`` stopwords, lowercased, query terms
deduplicated) and checks, for every SciFact train claim over the 5,183 abstracts, that the
index's scoring gives bm25s's top 10 (Lucene variant, k1 1.2, b 0.75, whose idf is the index's
``ln(1 + (N - df + 0.5) / (df + 0.5))``) with scores equal to 1e-9 after bm25s's missing
``(k1 + 1)`` factor of 2.2. The first test proves the scoring function and constants on the real
corpus, in process, without the database; the second goes end to end through ingest's ``en_v1``
analysis (``catalog_app.en_terms``) and the database index, before and after compaction. That
the index path equals the full scan on every history is the property tests' job
(``test_lexical_property.py``, ``test_lexical_property_en.py``).
"""
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from catalog_app.lexical.bm25_topk import TermPostings, best_k, contribution, idf, slots_of, top_candidates

DATA = Path("/work/shared/bench/beir-scifact")
K1_PLUS_1 = 2.2
TOP = 10

pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason=f"the SciFact data set is not at {DATA}")


def _texts() -> tuple[list[str], list[str]]:
    with open(DATA / "corpus.jsonl", encoding="utf-8") as lines:
        corpus = [f"{doc['title']}\n{doc['text']}" for doc in map(json.loads, lines)]
    qrels = (DATA / "qrels" / "train.tsv").read_text().replace("\r", "").splitlines()[1:]
    wanted = {line.split("\t")[0] for line in qrels if line.strip()}
    with open(DATA / "queries.jsonl", encoding="utf-8") as lines:
        queries = [query["text"] for query in map(json.loads, lines) if query["_id"] in wanted]
    return corpus, queries


def _index_top(postings_by_term, lengths, average, n, terms):
    """The index's top 10 (seqs, scores) for ``terms``, through its MaxScore path."""
    postings = []
    for term in terms:
        seqs, tfs = postings_by_term[term]
        contributions = contribution(idf(n, seqs.size), tfs, lengths[seqs], average)
        postings.append(TermPostings(seqs, tfs, lengths[seqs], idf(n, seqs.size), float(contributions.max())))
    found = top_candidates(postings, slots_of(postings), TOP, average)
    above, above_scores, tied, kth = best_k(found.seqs, found.scores, TOP)
    tied = np.sort(tied)[:TOP - above.size]
    return np.concatenate([above, tied]), np.concatenate([above_scores, np.full(tied.size, kth)])


def test_stemmed_bm25_scoring_equals_bm25s_on_scifact_train():
    bm25s = pytest.importorskip("bm25s")
    stemmer_module = pytest.importorskip("Stemmer")
    corpus, queries = _texts()
    stemmer = stemmer_module.Stemmer("english")
    tokenized = bm25s.tokenize(corpus, stopwords="en", stemmer=stemmer, show_progress=False)
    words = {index: word for word, index in tokenized.vocab.items()}
    documents = [[words[i] for i in ids] for ids in tokenized.ids]
    retriever = bm25s.BM25(method="lucene", k1=1.2, b=0.75, dtype="float64")
    retriever.index(tokenized, show_progress=False)

    n = len(documents)
    lengths = np.array([len(doc) for doc in documents], dtype=np.float64)
    average = float(lengths.sum() / n)
    rows: dict[str, tuple[list[int], list[float]]] = {}
    for seq, doc in enumerate(documents):
        for term, tf in Counter(doc).items():
            seqs, tfs = rows.setdefault(term, ([], []))
            seqs.append(seq)
            tfs.append(float(tf))
    postings_by_term = {term: (np.array(s, np.int64), np.array(t, np.float64)) for term, (s, t) in rows.items()}

    compared = 0
    for query in queries:
        terms = [t for t in dict.fromkeys(_query_terms(bm25s, stemmer, query)) if t in postings_by_term]
        if not terms:
            continue
        seqs, scores = _index_top(postings_by_term, lengths, average, n, terms)
        expected = retriever.get_scores([tokenized.vocab[t] for t in terms]) * K1_PLUS_1
        order = np.argsort(-expected, kind="stable")[:TOP]
        expected_top = expected[order]
        assert np.allclose(scores, expected_top[:scores.size], rtol=0, atol=1e-9), query
        # Ranks match except among records tied at equal score (both order those by seq).
        assert np.allclose(expected[seqs], scores, rtol=0, atol=1e-9), query
        assert set(seqs[scores > expected_top[-1] + 1e-9]) == set(order[expected_top > expected_top[-1] + 1e-9])
        compared += 1
    assert compared >= 800  # of the 809 train claims, all but those with no term in the corpus


def _query_terms(bm25s, stemmer, query: str) -> list[str]:
    """A query's stemmed terms as bm25s analyses it: the same call as the corpus's, as strings."""
    result = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, show_progress=False)
    words = {index: word for word, index in result.vocab.items()}
    return [words[i] for i in result.ids[0]]


def test_the_index_path_of_en_v1_equals_bm25s_on_scifact_train(workspace, tmp_path, settings):
    """The same comparison end to end: the 5,183 abstracts written through ingest (which analyses
    them into ``en_v1`` terms), each train claim analysed by ``en_query_terms`` and answered by
    ``index_top_k`` over the database index, first from the rows the writes logged, then from
    the compacted blocks."""
    bm25s = pytest.importorskip("bm25s")
    from catalog_app.en_terms import STEMMER, en_query_terms
    from catalog_app.lexical.compaction import lexical_compact
    from catalog_app.lexical.query import IndexScope, index_top_k
    from tests.catalog_app.lexical_support import load_lexical_catalog, maintain_both_analyzers, write

    maintain_both_analyzers(settings)
    load_lexical_catalog(workspace, tmp_path / "catalog")
    corpus, queries = _texts()
    ids = []
    for start in range(0, len(corpus), 100):
        ids += write(workspace, *({"collection": "notes", "collection_version": 2, "text": text}
                                  for text in corpus[start:start + 100]))
    position = {record_id: index for index, record_id in enumerate(ids)}
    stemmer = pytest.importorskip("Stemmer").Stemmer(STEMMER)
    tokenized = bm25s.tokenize(corpus, stopwords="en", stemmer=stemmer, show_progress=False)
    retriever = bm25s.BM25(method="lucene", k1=1.2, b=0.75, dtype="float64")
    retriever.index(tokenized, show_progress=False)

    for compacted in (False, True):
        if compacted:
            lexical_compact(workspace_id=workspace.pk, full=True)
        compared = 0
        for query in queries:
            terms = tuple(en_query_terms(query))
            assert list(terms) == list(dict.fromkeys(_query_terms(bm25s, stemmer, query)))
            known = [t for t in terms if t in tokenized.vocab]
            top = index_top_k(workspace_id=workspace.pk, analyzer="en_v1", terms=terms, k=TOP, scope=IndexScope())
            if not known:
                assert top.hits == ()
                continue
            assert top.n == len(corpus)
            expected = retriever.get_scores([tokenized.vocab[t] for t in known]) * K1_PLUS_1
            order = np.argsort(-expected, kind="stable")[:TOP]
            expected_top = expected[order]
            seqs = np.array([position[record_id] for record_id, _ in top.hits])
            scores = np.array([score for _, score in top.hits])
            assert np.allclose(scores, expected_top[:scores.size], rtol=0, atol=1e-9), query
            assert np.allclose(expected[seqs], scores, rtol=0, atol=1e-9), query
            # Ranks match except among records tied at the 10th score (the index orders ties by UUID).
            kth = expected_top[-1] + 1e-9
            assert set(seqs[scores > kth]) == set(order[expected_top > kth]), query
            compared += 1
        assert compared >= 800
