"""Property: ``index_top_k`` equals the brute-force full scan on random corpora.

Each example writes random batches (events, keyed facts restated and withdrawn, unready records
made ready or left pending, drafts approved or rejected) into one workspace inside a savepoint
that is rolled back afterwards, compacting the posting blocks after a batch or not (none,
incremental, full; tiny blocks, so ranges split, merge and get rebuilt), then compares random
queries (terms, k, scopes) between the index and the oracle: the same n, dfs, average length
and matched count, the same hits in the same order, scores within 1e-9. The score array is
indexed by seq or by rank among the distinct seqs at random.
"""
import numpy as np
import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catalog_app.lexical import blocks, bm25_topk
from catalog_app.lexical.check import lexical_check
from catalog_app.lexical.compaction import lexical_compact
from catalog_app.lexical.query import IndexScope, index_top_k
from catalog_app.services.enrichment import records_enrich
from catalog_app.services.record_ingest import record_ingest_batch
from catalog_app.services.review import draft_approve, draft_reject
from memseek_site.errors import ApiError
from tests.catalog_app.lexical_support import load_lexical_catalog, oracle_top_k

WORDS = ("ant", "bee", "cat", "dog", "eel", "fox", "gnu", "hen")
# Skewed: common words give low bounds, rare ones high, so MaxScore prunes.
COMMON = ("ant", "ant", "ant", "bee", "bee", "cat")
SLOTS = ("notes:1", "notes:2", "logs:1", "slow:1")

text = st.lists(st.one_of(st.sampled_from(COMMON), st.sampled_from(WORDS)), min_size=1, max_size=9).map(" ".join)
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
scope = st.builds(
    IndexScope,
    collection_ids=st.one_of(st.none(), st.lists(st.sampled_from(("notes", "logs", "slow")), unique=True).map(tuple)),
    statuses=st.sampled_from((("active",), ("draft",), ("active", "draft"))),
    types=st.one_of(st.none(), st.lists(st.sampled_from(("note", "fact")), min_size=1, unique=True).map(tuple)),
    keyed=st.sampled_from((None, True, False)),
    entities=st.one_of(st.none(), st.lists(st.sampled_from(("e1", "e2", "e3")), min_size=1, unique=True).map(tuple)),
    versions=st.one_of(st.none(), st.just((("notes", 2), ("logs", 1)))),
)
query = st.tuples(st.lists(st.sampled_from(WORDS + ("yak",)), min_size=1, max_size=4, unique=True).map(tuple),
                  st.one_of(st.integers(min_value=1, max_value=3), st.integers(min_value=4, max_value=12)), scope)


@pytest.fixture
def ws(workspace, tmp_path):
    load_lexical_catalog(workspace, tmp_path / "catalog")
    return workspace


def _apply(ws, batch: list[dict]) -> None:
    heads: dict = {}
    items = []
    for spec in batch:
        collection, version = spec["slot"].split(":")
        entry = {"collection": collection, "collection_version": int(version), "entity": spec["entity"],
                 "type": spec["type"], "status": spec["status"]}
        lane = (collection, spec["entity"], spec["key"], spec["status"])
        if spec["key"] is not None:
            entry["key"] = spec["key"]
        if spec["tombstone"] and spec["key"] is not None and lane in _apply.current:
            entry.update(tombstone=True, derived_from=[str(_apply.current[lane])])
        else:
            entry["text"] = spec["text"]
        items.append(entry)
        heads[len(items) - 1] = lane
    result = record_ingest_batch(workspace=ws, items=items)
    for outcome in result.inserted:
        spec, lane = batch[outcome.index], heads[outcome.index]
        if spec["key"] is not None:
            _apply.current[lane] = outcome.id
        if not outcome.ready and spec["enrich"]:
            records_enrich(record_ids=[outcome.id])
        if spec["status"] == "draft" and spec["key"] is not None and spec["review"]:
            review = draft_approve if spec["review"] == "approve" else draft_reject
            try:
                review(workspace=ws, draft_id=outcome.id, actor="property")
            except ApiError:
                pass  # not reviewable now (stale, a withdrawal, nothing to retract): nothing written


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(batches=st.lists(st.tuples(st.lists(item, min_size=1, max_size=12),
                                   st.sampled_from((None, "incremental", "full"))), min_size=1, max_size=5),
       queries=st.lists(query, min_size=1, max_size=5), dense=st.booleans())
def test_index_top_k_equals_the_full_scan(ws, batches, queries, dense, monkeypatch):
    index_equals_scan(ws, batches, queries, dense, monkeypatch, analyzer="bm25_v1")


def index_equals_scan(ws, batches, queries, dense: bool, monkeypatch, *, analyzer: str) -> None:
    """Apply ``batches`` (compacting where asked) with tiny blocks, then every query's index top-k
    under ``analyzer`` equals the full scan's (statistics, order, scores to 1e-9)."""
    monkeypatch.setattr(blocks, "BLOCK_POSTINGS", 3)
    monkeypatch.setattr(blocks, "SMALL_BLOCK", 2)
    monkeypatch.setattr("catalog_app.lexical.compaction.SMALL_BLOCK", 2)
    monkeypatch.setattr(bm25_topk, "DENSE_MIN", 1 << 20 if dense else 0)
    monkeypatch.setattr(bm25_topk, "DENSE_SPAN", 4 if dense else 0)
    with transaction.atomic():
        _apply.current = {}
        for batch, compaction in batches:
            _apply(ws, batch)
            if compaction:
                lexical_compact(workspace_id=ws.pk, full=compaction == "full")
        for terms, k, where in queries:
            got = index_top_k(workspace_id=ws.pk, analyzer=analyzer, terms=terms, k=k, scope=where)
            want = oracle_top_k(ws.pk, terms, k, where, analyzer=analyzer)
            assert (got.n, got.dfs, got.matched) == (want.n, want.dfs, want.matched), (terms, where)
            assert got.average_length == want.average_length
            assert [uid for uid, _ in got.hits] == [uid for uid, _ in want.hits], (terms, k, where)
            for (_, a), (_, b) in zip(got.hits, want.hits):
                assert abs(a - b) <= 1e-9
        assert lexical_check(workspace_id=ws.pk) == []
        transaction.set_rollback(True)


def test_pruning_skips_records_and_keeps_the_exact_ranking(ws):
    """A rare term with a high bound and a common one: most records holding only the common
    term are never scored in full, and the ranking is still the oracle's."""
    items = [{"collection": "notes", "collection_version": 1, "entity": f"e{i % 3}", "type": "note",
              "text": ("ant " * (1 + i % 3)) + ("bee" if i % 2 else "cat")} for i in range(90)]
    items += [{"collection": "notes", "collection_version": 1, "entity": "e1", "type": "note",
               "text": f"yak ant {'gnu' * (i % 2)}"} for i in range(4)]
    record_ingest_batch(workspace=ws, items=items)
    terms = ("ant", "yak")
    got = index_top_k(workspace_id=ws.pk, analyzer="bm25_v1", terms=terms, k=3, scope=IndexScope())
    want = oracle_top_k(ws.pk, terms, 3, IndexScope())
    assert got.scored < got.matched == want.matched == 94
    assert [uid for uid, _ in got.hits] == [uid for uid, _ in want.hits]
    assert [score for _, score in got.hits] == pytest.approx([score for _, score in want.hits], abs=1e-9)


def test_a_record_below_the_threshold_on_the_rare_term_is_still_scored_in_full(ws):
    """D's rare-term score is below the k-th (it is longer) but its common-term score lifts it
    into the top k: pruning keeps it because its bound, not its partial score, reaches theta."""
    filler = [{"text": "gnu hen"} for _ in range(46)] + [{"text": f"ant {'hen ' * (i % 3)}"} for i in range(50)]
    rare = [{"text": "yak gnu gnu"} for _ in range(3)]
    items = [{"collection": "notes", "collection_version": 1, "entity": "e1", "type": "note", **item}
             for item in filler + rare + [{"text": "yak ant ant ant"}]]
    ids = [outcome.id for outcome in record_ingest_batch(workspace=ws, items=items).inserted]
    got = index_top_k(workspace_id=ws.pk, analyzer="bm25_v1", terms=("yak", "ant"), k=3, scope=IndexScope())
    want = oracle_top_k(ws.pk, ("yak", "ant"), 3, IndexScope())
    assert got.hits[0][0] == ids[-1] == want.hits[0][0]
    assert [uid for uid, _ in got.hits] == [uid for uid, _ in want.hits]
    assert got.scored < got.matched


seq_values = st.one_of(st.integers(0, 40), st.integers(0, 2 ** 62))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(seq_values, max_size=60), of=st.lists(seq_values, max_size=60), dense=st.booleans())
def test_is_among_equals_numpy_isin(values, of, dense, monkeypatch):
    """The lookup-table membership test (taken when the span is dense) and its fallback both
    answer as ``np.isin``, the oracle, on values near each other and far apart."""
    monkeypatch.setattr(bm25_topk, "DENSE_MIN", 1 << 20 if dense else 0)
    monkeypatch.setattr(bm25_topk, "DENSE_SPAN", 4 if dense else 0)
    values, of = np.asarray(values, np.int64), np.asarray(of, np.int64)
    assert bm25_topk.is_among(values, of).tolist() == np.isin(values, of).tolist()
