"""``retrieve``'s trace hook (``search_app.engine.trace``): the documented stages in order, one
stage per leg on the thread running it with that leg's statements, and the hits each leg
proposed."""
import threading

import pytest

from catalog_app import embedding
from catalog_app.catalog.runtime import catalog_for_workspace
from retrieval_app.service import retrieve
from search_app.engine.trace import RETRIEVE_STAGES
from tests.retrieval_app.factories import catalog_dir, enrich, event, fact, load, note, policy, write
from tests.search_app.tracing import RecordingTrace

ORDER = ["settings + catalog lookup", "scope", "fuse", "reload", "score", "rerank", "compile", "receipt insert"]
PHASE1, PHASE2 = ("leg text", "leg policies"), ("leg graph", "leg entity", "leg derivatives")


@pytest.mark.django_db(transaction=True)
def test_retrieve_reports_its_stages_and_each_legs_statements_and_hits(workspace, settings):
    settings.MEMSEEK = {"TOUCH_ON_READ": False}
    load(workspace)
    fact_id, event_id, policy_id = write(workspace, [fact("budget", "budget is 50k"), event("budget meeting held"),
                                                     policy("Budget figures are confidential")])
    trace = RecordingTrace()
    payload = retrieve(workspace=workspace, request={"query": "budget"}, trace=trace)
    assert {s["name"] for s in trace.stages} <= set(RETRIEVE_STAGES)
    assert trace.order(set(ORDER)) == ORDER
    assert not trace.named("query vector") and not trace.named("leg vector")  # nothing in scope is embedded
    scope, fuse = trace.one("scope"), trace.one("fuse")
    first = [trace.one(name) for name in PHASE1]
    second = [trace.one(name) for name in PHASE2]
    assert all(scope["exit"] < leg["enter"] for leg in first)
    assert max(leg["exit"] for leg in first) < min(leg["enter"] for leg in second)
    assert all(leg["exit"] < fuse["enter"] for leg in second)
    assert {leg["thread"] for leg in first} != {threading.get_ident()}  # the pool's threads
    assert any("ts_rank_cd" in sql for sql in trace.one("leg text")["statements"])
    assert all(leg["statements"] for leg in first + second)
    assert not any("retrieval_app_receipt" in sql for leg in first + second for sql in leg["statements"])
    assert any("INSERT" in sql and "retrieval_app_receipt" in sql for sql in trace.one("receipt insert")["statements"])
    produced = {name: {str(hit.id) for hit in items} for name, _source, items in trace.produced_items}
    assert set(produced) == set(PHASE1 + PHASE2)
    assert {fact_id, event_id} <= produced["leg text"] and produced["leg policies"] == {policy_id}
    assert payload["receiptId"]


def test_stages_without_side_effects_store_no_receipt(workspace):
    load(workspace)
    write(workspace, [fact("budget", "budget is 50k")])
    trace = RecordingTrace()
    retrieve(workspace=workspace, request={"query": "budget"}, side_effects=False, trace=trace)
    assert not trace.named("receipt insert") and trace.named("compile")
    # Inside the test's transaction: on the test's own thread.
    assert all(leg["thread"] == threading.get_ident() for leg in trace.named("leg text"))


@pytest.mark.model
def test_the_vector_leg_uses_the_traces_query_vector_and_reports_its_hnsw_statements(workspace, tmp_path,
                                                                                        monkeypatch, settings):
    settings.MEMSEEK = {"VECTOR_EXACT_MAX": 0}  # the index walk, even in a workspace this small
    load(workspace, catalog_dir(tmp_path, embedded=True))
    ids = write(workspace, [note("The quarterly spending limit for the team is forty thousand dollars")])
    enrich(ids)
    query = "How much money may we use?"
    vector = embedding.embed_query(catalog_for_workspace(workspace).value("models", "models").embedding, query,
                                   workspace_id=workspace.pk)
    monkeypatch.setattr("retrieval_app.service.embed_query", lambda *args, **kwargs: pytest.fail("embedded"))
    trace = RecordingTrace({query: vector})
    retrieve(workspace=workspace, request={"query": query}, trace=trace)
    assert trace.named("query vector")
    # the test's transaction adds a savepoint around the scan's own transaction
    set_config, nearest = [sql for sql in trace.one("leg vector")["statements"] if "SAVEPOINT" not in sql]
    assert set_config.lstrip().startswith("SELECT set_config") and "<=>" in nearest
    produced = {name: {str(hit.id) for hit in items} for name, _source, items in trace.produced_items}
    assert produced["leg vector"] == set(ids)
