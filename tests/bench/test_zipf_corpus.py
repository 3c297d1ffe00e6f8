"""``bench/zipf_corpus.py``: deterministic by seed, a vocabulary of at least 100,000 words, lengths
within the measured quantiles, a Zipf-shaped frequency curve, queries made of their record's
terms with at least one of its rarest, and the token-id cache giving back what it stored."""
from collections import Counter

import numpy as np

from bench import zipf_corpus
from catalog_app.bm25_terms import bm25_query_terms, bm25_tokens


def test_corpus_is_deterministic_and_cached(tmp_path, monkeypatch):
    monkeypatch.setattr(zipf_corpus, "CACHE", tmp_path)
    first = zipf_corpus.make_records(400, seed=3)
    assert len(list(tmp_path.glob("zipf-v*-400-3.npz"))) == 1
    assert zipf_corpus.make_records(400, seed=3) == first  # read back from the cache
    monkeypatch.setattr(zipf_corpus, "CACHE", tmp_path / "other")
    assert zipf_corpus.make_records(400, seed=3) == first  # generated again
    assert zipf_corpus.make_records(400, seed=4) != first


def test_vocabulary_lengths_and_frequencies(tmp_path, monkeypatch):
    monkeypatch.setattr(zipf_corpus, "CACHE", tmp_path)
    words = zipf_corpus.vocabulary(0).tolist()
    assert len(set(words)) == len(words) >= 100_000
    assert all(bm25_tokens(word) == [word] for word in words[::997])  # one bm25_v1 term each
    records = zipf_corpus.make_records(3000, seed=0)
    lengths = np.array([len(bm25_tokens(item["text"])) for item in records])
    assert lengths.min() >= 1 and lengths.max() <= zipf_corpus.ABSTRACT_QUANTILES[-1]
    turns = np.array([item["type"] == "chat" for item in records])
    assert 0.7 < turns.mean() < 0.8
    assert lengths[turns].max() <= zipf_corpus.TURN_QUANTILES[-1]
    assert np.median(lengths[~turns]) > 4 * np.median(lengths[turns])
    counts = Counter(token for item in records for token in bm25_tokens(item["text"]))
    ranked = [count for _, count in counts.most_common()]
    assert len(counts) > 50_000  # a long tail of rare terms
    assert ranked[0] > 10 * ranked[99] > 10 * ranked[9999]  # Zipf: frequency falls with rank
    assert max(counts, key=counts.get) in words[:100]


def test_queries_hold_their_records_rarest_terms(tmp_path, monkeypatch):
    monkeypatch.setattr(zipf_corpus, "CACHE", tmp_path)
    records = zipf_corpus.make_records(500, seed=1)
    rank = {word: number for number, word in enumerate(zipf_corpus.vocabulary(1).tolist())}
    queries = zipf_corpus.make_queries(records, 40, seed=1)
    assert queries == zipf_corpus.make_queries(records, 40, seed=1)
    for query in queries:
        record = records[query["source_index"]]
        terms = bm25_query_terms(query["q"])
        source = set(bm25_tokens(record["text"]))
        assert 2 <= len(terms) <= 5 and set(terms) <= source and query["entity"] == record["entity"]
        assert max(rank[term] for term in source) in {rank[term] for term in terms}
