"""The search pipeline's trace hook (``search_app.engine.trace``): the services report the
documented stages in order, each channel's stage runs on the thread issuing its SQL and sees
exactly that channel's statements, and a trace's ``query_vector`` replaces the embedding."""
import threading

import pytest

from catalog_app import embedding as embedding_module
from catalog_app.lexical.tables import DOCUMENT as LEXICAL_DOCUMENTS
from search_app.engine.trace import NO_TRACE, SEARCH_STAGES
from search_app.services import search_run
from tests.search_app.graph_factories import article, load_graph_catalog, write
from tests.search_app.search_factories import ingest_ready, item
from tests.search_app.tracing import RecordingTrace, inside

REQUEST_ORDER = ["parse", "catalog lookup", "resolve", "query vector", "candidates", "reload", "recheck", "rank",
                 "order", "finalize", "catalog lookup", "present", "render", "serialize"]


@pytest.mark.model
@pytest.mark.django_db(transaction=True)
def test_a_hybrid_search_reports_its_stages_in_order_and_each_channels_sql_on_its_thread(catalog, settings):
    settings.MEMSEEK = {"TOUCH_ON_READ": False}
    ids = ingest_ready(catalog, [item("Budget draft for the offsite"), item("The budget needs another review"),
                                 item("The hiking trail is closed")])
    trace = RecordingTrace()
    body = search_run(workspace=catalog, body={"q": "budget", "mode": "hybrid", "scope": {"collections": ["main"]},
                                               "render": True}, trace=trace)
    assert {s["name"] for s in trace.stages} <= set(SEARCH_STAGES)
    channels = ["channel vector", "channel text", "channel recent"]
    assert trace.order(set(REQUEST_ORDER)) == REQUEST_ORDER
    candidates, main = trace.one("candidates"), threading.get_ident()
    markers = ("<=>", "to_tsvector('english'", "ORDER BY r.occurred_at DESC, r.seq DESC LIMIT")
    for name, marker in zip(channels, markers):
        channel = trace.one(name)
        assert inside(channel, candidates)
        assert channel["thread"] != main  # the pool's threads (the test's connection is not in a transaction)
        assert channel["statements"] and all("ANY(%s::uuid[])" not in sql for sql in channel["statements"])
        assert any(marker in sql for sql in channel["statements"])
    assert inside(trace.one("render"), trace.one("present"))
    ((name, source, proposed),) = trace.produced_items
    assert name == "candidates" and set(proposed) == set(ids)
    assert {hit["id"] for hit in body["hits"]} == {str(i) for i in ids}


def test_a_fused_search_reports_each_sources_stages_and_text_sql_then_fuses(workspace):
    load_graph_catalog(workspace)
    ids = write(workspace, [article("invoice a1", topic="billing", priority=9),
                            article("invoice a2", topic="support", priority=7)])
    sources = [{"name": name, "mode": "text", "scope": {"collections": ["articles"]}, "rank": ["score", "priority"],
                "k": 2, **extra} for name, extra in (("billing", {"where": {"topic": {"eq": "billing"}}}), ("all", {}))]
    trace = RecordingTrace()
    search_run(workspace=workspace, body={"q": "invoice", "fuse": {"kind": "rrf"}, "k": 10, "sources": sources},
               trace=trace)
    fuse = trace.one("fuse")
    for source in ("billing", "all"):
        per_source = [trace.one(name, source) for name in ("candidates", "channel text", "reload", "recheck", "rank",
                                                            "order")]
        assert [s["enter"] for s in per_source] == sorted(s["enter"] for s in per_source)
        assert all(s["exit"] < fuse["enter"] for s in per_source)
        statements = trace.one("channel text", source)["statements"]
        assert any("to_tsvector('english', %s)" in sql for sql in statements)
        # A typed filter keeps the exact scan; the plain source reads the lexical index.
        scans = [sql for sql in statements if "WITH d AS MATERIALIZED" in sql]
        reads_index = any(LEXICAL_DOCUMENTS in sql for sql in statements)
        assert (bool(scans), reads_index) == ((True, False) if source == "billing" else (False, True))
    assert fuse["exit"] < trace.one("finalize")["enter"]
    assert not trace.named("query vector")  # text sources embed nothing
    proposed = {source: {str(i) for i in items} for name, source, items in trace.produced_items}
    assert proposed == {"billing": {ids[0]}, "all": set(ids)}


@pytest.mark.model
def test_a_traces_query_vector_replaces_the_embedding(catalog, monkeypatch):
    ingest_ready(catalog, [item("Budget draft for the offsite")])
    vector = embedding_module.embed_query(catalog_for(catalog), "budget", workspace_id=catalog.pk)
    calls = []
    real = embedding_module.embed_query
    monkeypatch.setattr("search_app.pipeline.embed_query", lambda *a, **k: calls.append(a) or real(*a, **k))
    body = {"q": "budget", "mode": "vector", "scope": {"collections": ["main"]}}
    traced = search_run(workspace=catalog, body=body, trace=RecordingTrace({"budget": vector}))
    assert calls == []
    untraced = search_run(workspace=catalog, body=body, trace=NO_TRACE)
    assert [hit["id"] for hit in traced["hits"]] == [hit["id"] for hit in untraced["hits"]]
    assert len(calls) == 1


def catalog_for(workspace):
    from catalog_app.catalog.runtime import catalog_for_workspace

    return catalog_for_workspace(workspace).value("models", "models").embedding
