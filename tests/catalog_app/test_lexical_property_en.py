"""Property: ``index_top_k`` equals the brute-force full scan for the stemmed ``en_v1`` analyzer.

The same random histories as ``test_lexical_property`` (events, keyed facts restated and
withdrawn, unready records made ready or left pending, drafts approved or rejected, compactions
of tiny blocks in between), written with inflected words, stopwords and one-letter tokens so the
analysis (stemming, stopword removal, ``\\w\\w+``) changes terms and lengths; then random queries
of stemmed terms compared with the scan over every visible record's stored ``en_v1`` terms: the
same n, dfs, average length and matched count, the same hits in order, scores within 1e-9.
"""
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.catalog_app.lexical_support import load_lexical_catalog, maintain_both_analyzers
from tests.catalog_app.test_lexical_property import SLOTS, index_equals_scan, scope

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
    index_equals_scan(ws, batches, queries, dense, monkeypatch, analyzer="en_v1")
