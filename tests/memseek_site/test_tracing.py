"""One request's trace, exported in memory: the HTTP span, the GenAI memory operation, the
search pipeline's stages (the ``Trace`` hook as spans, pool threads included), the database
statements and the Celery task the request enqueued (eager here: tasks run in the request after
its transaction commits), all in one trace (docs/metrics.md)."""
import pytest
from django.db import connections
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from rest_framework.test import APIClient

from memseek_site.tracing import tracing_configure, tracing_requested, tracing_stop

pytestmark = [pytest.mark.metrics, pytest.mark.model, pytest.mark.django_db(transaction=True)]

RECORDS = {"records": [
    {"entity": "contact.maria", "collection": "main", "type": "event", "text": "Maria approved the Q3 budget."},
    {"entity": "contact.maria", "collection": "main", "type": "event", "text": "Maria asked for the Q3 forecast."}]}


@pytest.fixture
def spans(settings):
    assert settings.CELERY_TASK_ALWAYS_EAGER, "this test runs the enqueued task eagerly (no CELERY_BROKER_URL)"
    exporter = InMemorySpanExporter()
    tracing_configure(exporter=exporter)
    # Connections opened before the psycopg instrumentation are not traced: start new ones.
    connections.close_all()
    yield exporter
    tracing_stop()
    connections.close_all()


def descendants(finished, root) -> list:
    children = {}
    for span in finished:
        if span.parent is not None:
            children.setdefault(span.parent.span_id, []).append(span)
    found, todo = [], [root]
    while todo:
        span = todo.pop()
        found.append(span)
        todo.extend(children.get(span.context.span_id, []))
    return found


def test_a_search_request_is_one_trace_through_its_stages_into_the_celery_task(spans, workspace_and_key, catalog):
    workspace, key = workspace_and_key
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert client.post("/records", RECORDS, format="json").status_code == 200
    spans.clear()

    response = client.get("/search", {"q": "Q3 budget", "k": 5})
    assert response.status_code == 200
    hits = response.json()["hits"]
    assert hits

    finished = spans.get_finished_spans()
    [server] = [span for span in finished if span.kind == SpanKind.SERVER]
    assert server.attributes["http.route"] == "search"
    in_trace = descendants(finished, server)
    # Everything this request did is under its HTTP span, in one trace, and nothing else was exported.
    assert {span.context.trace_id for span in finished} == {server.context.trace_id}
    assert len(in_trace) == len(finished)

    [memory] = [span for span in in_trace if span.name == "search_memory"]
    assert memory.parent.span_id == server.context.span_id
    assert memory.attributes["gen_ai.operation.name"] == "search_memory"
    assert memory.attributes["gen_ai.provider.name"] == "memseek"
    assert memory.attributes["gen_ai.memory.store.id"] == workspace.name
    assert memory.attributes["gen_ai.memory.record.count"] == len(hits)
    assert "gen_ai.memory.query.text" not in memory.attributes  # content capture is opt-in

    under_memory = descendants(finished, memory)
    stages = {span.attributes.get("memseek.stage") for span in under_memory} - {None}
    assert {"parse", "resolve", "query vector", "candidates", "reload", "recheck", "rank", "finalize",
            "present"} <= stages
    # The channels run on pool threads and still belong to the request's operation.
    assert {"channel vector", "channel text"} <= stages
    assert any(span.attributes.get("db.system") == "postgresql" or span.attributes.get("db.system.name") == "postgresql"
               for span in under_memory)

    [task] = [span for span in in_trace if span.name == "run/catalog_app.tasks.touch_records"]
    assert task.kind == SpanKind.CONSUMER
    assert task in under_memory


def test_a_write_is_update_memory_and_a_withdrawal_delete_memory(spans, workspace_and_key, catalog):
    workspace, key = workspace_and_key
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert client.post("/records", RECORDS, format="json").status_code == 200
    [write] = [span for span in spans.get_finished_spans() if span.name == "update_memory"]
    assert write.attributes["gen_ai.operation.name"] == "update_memory"
    assert write.attributes["gen_ai.memory.store.id"] == workspace.name
    assert write.attributes["gen_ai.memory.record.count"] == 2
    # The enrichment the write enqueued ran inside it.
    assert any(span.name == "run/catalog_app.tasks.enrich_records" for span in descendants(spans.get_finished_spans(),
                                                                                             write))
    spans.clear()
    bad = client.post("/records", {"records": [{**RECORDS["records"][0], "collection": "nope"}]}, format="json")
    assert bad.status_code == 422
    [refused] = [span for span in spans.get_finished_spans() if span.name == "update_memory"]
    assert refused.attributes["error.type"] == bad.json()["error"]


def test_query_text_is_recorded_only_when_content_capture_is_on(spans, workspace_and_key, catalog, monkeypatch):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {workspace_and_key[1]}")
    assert client.post("/search", {"q": "Q3 budget", "mode": "hybrid"}, format="json").status_code == 200
    [memory] = [span for span in spans.get_finished_spans() if span.name == "search_memory"]
    assert memory.attributes["gen_ai.memory.query.text"] == "Q3 budget"


@pytest.mark.parametrize("environment, requested", [
    ({}, False), ({"OTEL_TRACES_EXPORTER": "none"}, False),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}, True),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_TRACES_EXPORTER": "none"}, False),
    ({"OTEL_TRACES_EXPORTER": "console"}, True)])
def test_tracing_is_off_unless_the_environment_asks(monkeypatch, environment, requested):
    for name in ("OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert tracing_requested() is requested
    if not requested:
        assert tracing_configure() is None
