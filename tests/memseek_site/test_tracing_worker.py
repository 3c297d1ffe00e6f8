"""One request's trace across processes: gunicorn (the API) and a real Celery worker (prefork)
on the local Redis, both exporting with the real OTLP exporter to a receiver on loopback that
keeps the spans in memory. A search's trace holds the HTTP span, the GenAI memory operation,
the pipeline's stages and the worker's run of the task the request enqueued, whose parent is
the request's publishing span; a write's trace reaches the worker's enrichment the same way
(docs/metrics.md, "One request's trace").

Skipped only when no Redis answers on 127.0.0.1:6379 (CI provides one).
"""
import json
from urllib.parse import urlencode

import pytest
from django.db import connection

from bench.processes import Server, database_url
from catalog_app.models import Record
from tests.catalog_app.test_worker import (  # noqa: F401 (fixtures)
    BROKER_URL, broker, wait_for, workers)
from tests.memseek_site.otlp_receiver import CONSUMER, PRODUCER, SERVER, OTLPReceiver

pytestmark = [pytest.mark.metrics, pytest.mark.worker, pytest.mark.model, pytest.mark.django_db(transaction=True)]

API, WORKER = "memseek-api", "memseek-worker"
RECORDS = {"records": [
    {"entity": "contact.maria", "collection": "main", "type": "event", "text": "Maria approved the Q3 budget."},
    {"entity": "contact.maria", "collection": "main", "type": "event", "text": "Maria asked for the Q3 forecast."}]}


@pytest.fixture
def receiver():
    with OTLPReceiver() as running:
        yield running


def otel_env(receiver, service: str) -> dict:
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_SERVICE_NAME": service,
            "OTEL_BSP_SCHEDULE_DELAY": "200"}  # milliseconds between batches: the test waits less


@pytest.fixture
def api_server(catalog, receiver, broker):
    server = Server(workers=1, env={"DATABASE_URL": database_url(dict(connection.settings_dict)),
                                    "CELERY_BROKER_URL": BROKER_URL, "OMP_NUM_THREADS": "1",
                                    # The model loaded before the server answers, as quickstart does, and
                                    # a search deadline a busy machine cannot miss: the trace is the point.
                                    "PRELOAD_EMBEDDING_MODEL": "1", "REQUEST_DEADLINE_SEARCH_MS": "120000",
                                    **otel_env(receiver, API)})
    yield server
    server.stop()


def call(server: Server, method: str, path: str, key: str, payload=None) -> dict:
    status, raw = server.request(method, path, None if payload is None else json.dumps(payload).encode(), key)
    assert status == 200, (status, raw[:2000], server.log_tail())
    return json.loads(raw)


def ancestors(span, spans) -> list:
    """``span``'s parents up to its trace's root, nearest first, over every process's spans."""
    by_id = {each.span_id: each for each in spans}
    chain = []
    while span.parent_span_id:
        span = by_id.get(span.parent_span_id)
        if span is None:
            break
        chain.append(span)
    return chain


def exported_run(receiver, task: str, trace_id: str, logs) -> object:
    """The worker's run span of ``task`` in trace ``trace_id``, once it and its parents arrived."""
    def arrived():
        spans = receiver.spans()
        runs = [span for span in spans if span.name == f"run/{task}" and span.trace_id == trace_id]
        return runs and any(span.kind == SERVER for span in ancestors(runs[0], spans))

    wait_for(arrived, 60, f"the worker's span of {task} in the request's trace", logs)
    [run] = [span for span in receiver.spans() if span.name == f"run/{task}" and span.trace_id == trace_id]
    return run


def test_a_request_is_one_trace_through_the_api_stages_into_the_workers_task(api_server, workspace_and_key,
                                                                               receiver, workers):
    workspace, key = workspace_and_key
    workers.start(**otel_env(receiver, WORKER), PENDING_RECOVERY_AGE_S=3600)

    # The write: update_memory, whose enrichment task the worker runs in the write's trace.
    call(api_server, "POST", "/records", key, RECORDS)
    wait_for(lambda: any(span.name == "update_memory" for span in receiver.spans()), 30, "the write's spans")
    [write] = [span for span in receiver.spans() if span.name == "update_memory"]
    assert (write.service, write.attributes["gen_ai.memory.store.id"], write.attributes["gen_ai.memory.record.count"]) \
        == (API, workspace.name, 2)
    enrich = exported_run(receiver, "catalog_app.tasks.enrich_records", write.trace_id, workers.logs)
    assert enrich.service == WORKER and enrich.kind == CONSUMER
    assert write in ancestors(enrich, receiver.spans())
    wait_for(lambda: not Record.objects.filter(workspace=workspace, enriched_at__isnull=True).exists(), 60,
             "the records to be ready", workers.logs)

    # The search: its HTTP span, the memory operation, the stages, and the touch the worker runs.
    hits = call(api_server, "GET", "/search?" + urlencode({"q": "Q3 budget", "k": 5}), key)["hits"]
    assert hits

    def search_server_span():
        return [span for span in receiver.spans()
                if span.kind == SERVER and span.attributes.get("http.route") == "search"]
    wait_for(search_server_span, 30, "the search request's span")
    [server] = search_server_span()
    assert server.service == API
    touch = exported_run(receiver, "catalog_app.tasks.touch_records", server.trace_id, workers.logs)
    spans = receiver.spans()
    in_trace = [span for span in spans if span.trace_id == server.trace_id]

    # The worker's task span: in the request's trace, its parent the API process's publishing
    # span of that task, which descends from the request's HTTP span.
    assert (touch.service, touch.kind) == (WORKER, CONSUMER)
    chain = ancestors(touch, spans)
    assert (chain[0].service, chain[0].kind, chain[0].name) == (API, PRODUCER,
                                                               "apply_async/catalog_app.tasks.touch_records")
    assert chain[-1] == server
    [memory] = [span for span in in_trace if span.name == "search_memory"]
    assert memory in chain
    assert memory.parent_span_id == server.span_id
    assert memory.attributes["gen_ai.operation.name"] == "search_memory"
    assert memory.attributes["gen_ai.provider.name"] == "memseek"
    assert memory.attributes["gen_ai.memory.store.id"] == workspace.name
    assert memory.attributes["gen_ai.memory.record.count"] == len(hits)
    assert "gen_ai.memory.query.text" not in memory.attributes

    stages = {span.attributes.get("memseek.stage") for span in in_trace if memory in ancestors(span, spans)}
    assert {"parse", "resolve", "query vector", "candidates", "rank", "finalize", "present",
            "channel vector", "channel text"} <= stages
    # Both processes' spans are in the one trace, and every one of them descends from the request.
    assert {span.service for span in in_trace} == {API, WORKER}
    assert all(server in ancestors(span, spans) for span in in_trace if span != server)
