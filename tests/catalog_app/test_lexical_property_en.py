"""Property: ``index_top_k`` equals the brute-force full scan for the stemmed ``en_v1`` analyzer.

The same random histories as ``test_lexical_property`` (events, keyed facts restated and
withdrawn, unready records made ready or left pending, drafts approved or rejected, compactions
of tiny blocks in between), written with inflected words, stopwords and one-letter tokens so the
analysis (stemming, stopword removal, ``\\w\\w+``) changes terms and lengths; then random queries
of stemmed terms compared with the scan over every visible record's stored ``en_v1`` terms: the
same n, dfs, average length and matched count, the same hits in order, scores within 1e-9.
"""
import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catalog_app.lexical import blocks, scoring
from catalog_app.lexical.check import lexical_check
from catalog_app.lexical.compaction import lexical_compact
from catalog_app.lexical.query import index_top_k
from tests.catalog_app.lexical_support import load_lexical_catalog, maintain_both_analyzers, oracle_top_k
from tests.catalog_app.test_lexical_property import SLOTS, _apply, scope

WORDS = ("run", "running", "Runs", "runner", "cat", "cats", "dog", "dogs", "the", "a", "of", "x", "fox_trot", "is")
TERMS = ("run", "runner", "cat", "dog", "fox_trot", "yak")

text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=9).map(" ".join)
item = st.fixed_dictionaries({
    "slot": st.sampled_from(SLOTS),
    "entity": st.sampled_from(("e1", "e2", "e3")),
    "type": st.sampled_from(("note", "fact")),
    "key": st.one_of(st.none(), st.sampled_from(("k1", "k2"))),
    "status": st.sampled_from(("active", "active", "draft")),
    "text": text,
    "tombstone": st.booleans(),
    "enrich": st.booleans(),
    "review": st.sampled_from((None, None, "approve", "reject")),
})
query = st.tuples(st.lists(st.sampled_from(TERMS), min_size=1, max_size=4, unique=True).map(tuple),
                  st.integers(min_value=1, max_value=8), scope)


@pytest.fixture
def ws(workspace, tmp_path, settings):
    maintain_both_analyzers(settings)
    load_lexical_catalog(workspace, tmp_path / "catalog")
    return workspace


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(batches=st.lists(st.tuples(st.lists(item, min_size=1, max_size=12),
                                   st.sampled_from((None, "incremental", "full"))), min_size=1, max_size=4),
       queries=st.lists(query, min_size=1, max_size=5), dense=st.booleans())
def test_en_v1_index_top_k_equals_the_full_scan(ws, batches, queries, dense, monkeypatch):
    monkeypatch.setattr(blocks, "BLOCK_POSTINGS", 3)
    monkeypatch.setattr(blocks, "SMALL_BLOCK", 2)
    monkeypatch.setattr("catalog_app.lexical.compaction.SMALL_BLOCK", 2)
    monkeypatch.setattr(scoring, "DENSE_MIN", 1 << 20 if dense else 0)
    monkeypatch.setattr(scoring, "DENSE_SPAN", 4 if dense else 0)
    with transaction.atomic():
        _apply.current = {}
        for batch, compaction in batches:
            _apply(ws, batch)
            if compaction:
                lexical_compact(workspace_id=ws.pk, full=compaction == "full")
        for terms, k, where in queries:
            got = index_top_k(workspace_id=ws.pk, analyzer="en_v1", terms=terms, k=k, scope=where)
            want = oracle_top_k(ws.pk, terms, k, where, analyzer="en_v1")
            assert (got.n, got.dfs, got.matched) == (want.n, want.dfs, want.matched), (terms, where)
            assert got.average_length == want.average_length
            assert [uid for uid, _ in got.hits] == [uid for uid, _ in want.hits], (terms, k, where)
            for (_, a), (_, b) in zip(got.hits, want.hits):
                assert abs(a - b) <= 1e-9
        assert lexical_check(workspace_id=ws.pk) == []
        transaction.set_rollback(True)
