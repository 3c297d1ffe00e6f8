"""Property: after an entity is erased, the lexical statistics are those of a workspace that
never held it.

Each example writes the same random batches (events and keyed facts, restated, in the active and
the draft lanes, over two collections and two versions) into two fresh workspaces, compacting
after a batch or not, except that the second never receives the records of entity ``gone``;
the first then erases ``gone``. For random queries and scopes both answer with the same N,
average length, dfs and matched count, and the same scores (ids differ between workspaces);
the first still equals the brute-force oracle and passes ``lexical_check``.
"""
import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catalog_app.lexical.check import lexical_check
from catalog_app.lexical.compaction import lexical_compact
from catalog_app.lexical.query import IndexScope, index_top_k
from catalog_app.services.record_erase import ErasureTarget, records_erase
from catalog_app.services.record_ingest import record_ingest_batch
from catalog_app.services.workspaces import workspace_create
from tests.catalog_app.lexical_support import load_lexical_catalog, oracle_top_k

pytestmark = pytest.mark.django_db

WORDS = ("ant", "bee", "cat", "dog", "eel", "fox")
SLOTS = ("notes:1", "notes:2", "logs:1")
ENTITIES = ("gone", "e1", "e2")

item = st.fixed_dictionaries({
    "slot": st.sampled_from(SLOTS),
    "entity": st.sampled_from(ENTITIES),
    "key": st.one_of(st.none(), st.sampled_from(("k1", "k2"))),
    "status": st.sampled_from(("active", "active", "draft")),
    "text": st.lists(st.sampled_from(WORDS), min_size=1, max_size=7).map(" ".join),
})
scope = st.builds(
    IndexScope,
    collection_ids=st.one_of(st.none(), st.lists(st.sampled_from(("notes", "logs")), min_size=1,
                                                 unique=True).map(tuple)),
    statuses=st.sampled_from((("active",), ("draft",), ("active", "draft"))),
    keyed=st.sampled_from((None, True, False)),
    entities=st.one_of(st.none(), st.just(("e1",)), st.just(("gone", "e2"))),
)
query = st.tuples(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3, unique=True).map(tuple), scope)


def _write(workspace, batch: list[dict]) -> None:
    items = []
    for spec in batch:
        collection, version = spec["slot"].split(":")
        entry = {"collection": collection, "collection_version": int(version), "entity": spec["entity"],
                 "type": "fact" if spec["key"] else "note", "status": spec["status"], "text": spec["text"]}
        if spec["key"] is not None:
            entry["key"] = spec["key"]
        items.append(entry)
    if items:
        record_ingest_batch(workspace=workspace, items=items)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(batches=st.lists(st.tuples(st.lists(item, min_size=1, max_size=10), st.booleans()), min_size=1, max_size=4),
       queries=st.lists(query, min_size=1, max_size=6))
def test_erased_entity_leaves_the_statistics_of_a_workspace_that_never_held_it(db, tmp_path, batches, queries):
    with transaction.atomic():
        erased, fresh = (workspace_create(name=name)[0] for name in ("erased", "fresh"))
        for workspace in (erased, fresh):
            load_lexical_catalog(workspace, tmp_path / workspace.name)
        for batch, compact in batches:
            _write(erased, batch)
            _write(fresh, [spec for spec in batch if spec["entity"] != "gone"])
            if compact:
                for workspace in (erased, fresh):
                    lexical_compact(workspace_id=workspace.pk)
        records_erase(workspace=erased, target=ErasureTarget(entity="gone"), actor_key_id=None, dry_run=False)
        for terms, where in queries:
            got = index_top_k(workspace_id=erased.pk, analyzer="bm25_v1", terms=terms, k=50, scope=where)
            never = index_top_k(workspace_id=fresh.pk, analyzer="bm25_v1", terms=terms, k=50, scope=where)
            want = oracle_top_k(erased.pk, terms, 50, where)
            assert (got.n, got.average_length, got.dfs, got.matched) == \
                   (never.n, never.average_length, never.dfs, never.matched), (terms, where)
            assert sorted(score for _, score in got.hits) == pytest.approx(sorted(score for _, score in never.hits))
            assert (got.n, got.dfs, got.matched) == (want.n, want.dfs, want.matched)
            assert [uid for uid, _ in got.hits] == [uid for uid, _ in want.hits]
        assert lexical_check(workspace_id=erased.pk) == []
        transaction.set_rollback(True)
