"""Enrichment: processors run once, write once, and make records ready (eager Celery, real
PostgreSQL, the real MiniLM model, and a real loopback chat-completions server)."""
import math
import threading
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from catalog_app.catalog.runtime import catalog_for_workspace
from catalog_app.models import Record, RecordEmbedding
from catalog_app.services import enrichment
from catalog_app.services.catalog_load import catalog_load
from catalog_app.services.enrichment import EnrichmentDeferred, records_enrich
from catalog_app.tasks import enqueue_enrichment, enrich_records, recover_pending_records
from memseek_site.celery import app as celery_app
from tests.catalog_app.factories import pending_record
from tests.openai_server import Hang, ScriptedOpenAIServer, Status, llm_catalog_dir

SPACE = "minilm-l6-v2"


@pytest.fixture(autouse=True)
def eager_celery():
    """Tasks run in-process whatever CELERY_BROKER_URL says (unit tests never need a worker)."""
    before = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = before


@pytest.fixture
def server():
    with ScriptedOpenAIServer() as running:
        yield running


@pytest.fixture
def llm_catalog(workspace, server, tmp_path):
    """``fixtures/catalogs/llm_scoring`` pointed at ``server``; returns the workspace."""
    catalog_load(workspace=workspace, directory=llm_catalog_dir(tmp_path, server.base_url))
    workspace.refresh_from_db()
    return workspace


def processor_hash(workspace, name: str) -> str:
    return catalog_for_workspace(workspace).get("processor", name).hash


def vector_of(record) -> list[float]:
    return list(RecordEmbedding.objects.get(record=record, space=SPACE).embedding)


# --- embeddings and constant processors (example catalog) -------------------------------------

@pytest.mark.model
def test_embedding_processor_stores_a_unit_minilm_vector_and_makes_the_record_ready(catalog):
    record = pending_record(catalog, collection="main", text="The customer asked for a refund.")
    outcome = records_enrich(record_ids=[record.id])
    record.refresh_from_db()
    assert record.ready
    assert outcome.ready == [str(record.id)]
    vector = vector_of(record)
    assert len(vector) == 384
    assert math.sqrt(sum(x * x for x in vector)) == pytest.approx(1.0, abs=1e-5)
    meta = record.annotation_meta["embedding_v1"]
    assert meta["status"] == "ok"
    assert meta["space"] == SPACE
    assert meta["config_hash"] == processor_hash(catalog, "embedding_v1")
    assert len(meta["output_hash"]) == 64
    assert meta["completed_at"]
    assert record.annotations == {} and record.enrichment_error is None
    assert "importance" not in record.annotation_meta  # a client processor: written at ingest only


@pytest.mark.model
def test_stored_vectors_keep_related_records_closer_than_unrelated_ones(catalog):
    records = [pending_record(catalog, collection="main", text=text) for text in (
        "My card was charged twice for the same order; please refund one payment.",
        "I was billed two times and want the duplicate charge returned.",
        "The hiking trail near the lake is closed because of snow.")]
    records_enrich(record_ids=[record.id for record in records])
    billing, refund, hiking = (vector_of(record) for record in records)
    dot = lambda a, b: sum(x * y for x, y in zip(a, b))  # noqa: E731 (unit vectors: dot == cosine)
    assert dot(billing, refund) > dot(billing, hiking) + 0.2


@pytest.mark.model
def test_vectors_are_searchable_by_cosine_distance_in_sql(catalog):
    records = [pending_record(catalog, collection="main", text=text) for text in (
        "Quarterly revenue grew by twelve percent.", "The office dog is called Biscuit.")]
    records_enrich(record_ids=[record.id for record in records])
    from catalog_app.embedding import embed_query

    query = embed_query(catalog_for_workspace(catalog).value("models", "models").embedding, "sales went up",
                        workspace_id=catalog.pk)
    with connection.cursor() as cursor:
        cursor.execute("SELECT record_id FROM catalog_app_recordembedding WHERE space = %s "
                       "ORDER BY embedding::vector(384) <=> %s::vector(384) LIMIT 1", [SPACE, str(query)])
        assert cursor.fetchone()[0] == records[0].id


@pytest.mark.model
def test_constant_json_default_is_written_and_the_ticket_is_ready_once_both_required_wrote(catalog):
    ticket = pending_record(catalog, collection="tickets", text="Nobody answered my call.", type="complaint")
    records_enrich(record_ids=[ticket.id])
    ticket.refresh_from_db()
    assert ticket.annotations == {"sentiment": {"label": "neutral"}}
    assert ticket.annotation_meta["sentiment"]["status"] == "ok"
    assert ticket.annotation_meta["sentiment"]["source"] == "constant"
    assert set(ticket.annotation_meta) == {"embedding_v1", "sentiment"}
    assert ticket.ready


@pytest.mark.model
def test_enriching_twice_writes_nothing_new(catalog):
    records = [pending_record(catalog, collection="tickets", text=f"Ticket {i}", type="complaint") for i in range(3)]
    ids = [record.id for record in records]
    first = records_enrich(record_ids=ids)

    def state():
        rows = {r.id: (r.annotations, r.annotation_meta, r.scores, r.enriched_at, r.enrichment_error)
                for r in Record.objects.filter(id__in=ids)}
        vectors = {e.record_id: (e.id, e.created_at) for e in RecordEmbedding.objects.filter(record_id__in=ids)}
        return rows, vectors

    before = state()
    second = records_enrich(record_ids=ids)
    assert first.written == 6 and len(first.ready) == 3
    assert second.written == 0 and second.ready == [] and second.deferred == []
    assert state() == before


def test_tombstones_and_unknown_ids_are_skipped(catalog):
    now = timezone.now()
    definition = catalog_for_workspace(catalog).get("collection", "main", 1)
    tombstone = Record.objects.create(
        workspace=catalog, collection="main", collection_version=1, collection_hash=definition.contract_hash,
        entity="customer-1", type="note", key="k", text="", content={"text": "", "tombstone": True}, tombstone=True,
        occurred_at=now, created_at=now, last_accessed=now, enriched_at=now)
    outcome = records_enrich(record_ids=[tombstone.id, "00000000-0000-0000-0000-000000000000"])
    assert outcome.written == 0
    assert sorted(outcome.skipped) == sorted([str(tombstone.id), "00000000-0000-0000-0000-000000000000"])
    assert not RecordEmbedding.objects.exists()


def test_ready_record_still_gets_its_missing_optional_processors_without_losing_readiness(llm_catalog, server):
    ready_at = timezone.now() - timedelta(hours=1)
    note = pending_record(llm_catalog, collection="notes", text="Call went fine.", type="call", enriched_at=ready_at,
                          annotation_meta={"importance": {"status": "ok"}, "triage": {"status": "ok"}})
    server.chat.append({"summary": "A fine call."})
    records_enrich(record_ids=[note.id])
    note.refresh_from_db()
    assert note.enriched_at == ready_at
    assert note.annotations["gist"] == {"summary": "A fine call."}
    assert note.scores == {"reviewed": 1.0}
    assert len(server.chat_requests()) == 1


# --- llm processors (llm_scoring catalog, loopback chat server) ---------------------------------

def test_llm_score_and_json_processors_write_clamped_validated_results(llm_catalog, server):
    server.chat.extend([{"score": 14}, {"label": "outage", "urgency": 4}])
    note = pending_record(llm_catalog, collection="notes", text="The whole site has been down for an hour.")
    records_enrich(record_ids=[note.id])
    note.refresh_from_db()
    assert note.ready
    assert note.annotations == {"importance": {"value": 10.0}, "triage": {"label": "outage", "urgency": 4},
                                "reviewed": {"value": 1.0}}
    assert note.scores == {"importance": 10.0, "urgency": 4.0, "reviewed": 1.0}
    assert note.annotation_meta["importance"]["model"] == "scripted:scripted-small"
    assert note.annotation_meta["triage"]["config_hash"] == processor_hash(llm_catalog, "triage")
    assert "gist" not in note.annotation_meta  # gist applies to type "call" only
    assert note.enrichment_error is None
    score_request, triage_request = server.chat_requests()
    assert score_request.body["model"] == "scripted-small"
    assert score_request.body["temperature"] == 0
    assert score_request.body["max_completion_tokens"] == 300
    assert score_request.body["response_format"]["json_schema"]["name"] == "importance"
    assert "Rate from 1 to 10" in score_request.body["messages"][0]["content"]
    assert "The whole site has been down" in score_request.body["messages"][1]["content"]
    assert triage_request.body["response_format"]["json_schema"]["schema"]["required"] == ["label", "urgency"]


def test_malformed_answer_is_corrected_once(llm_catalog, server):
    server.chat.extend(["I would say about 7.", {"score": 7}, {"label": "billing", "urgency": 2}])
    note = pending_record(llm_catalog, collection="notes", text="Invoice question.")
    records_enrich(record_ids=[note.id])
    note.refresh_from_db()
    assert note.scores["importance"] == 7.0
    assert note.annotation_meta["importance"]["status"] == "ok"
    retry = server.chat_requests()[1].body["messages"]
    assert retry[-2] == {"role": "assistant", "content": "I would say about 7."}
    assert "not usable" in retry[-1]["content"] and retry[-1]["role"] == "user"


def test_malformed_twice_falls_back_to_the_declared_defaults_and_the_record_is_ready(llm_catalog, server):
    server.chat.extend(['{"score": "high"}', "still not json",
                        {"label": "weather", "urgency": 9}, {"label": "outage"}])
    note = pending_record(llm_catalog, collection="notes", text="Something happened.")
    records_enrich(record_ids=[note.id])
    note.refresh_from_db()
    assert note.ready
    assert note.annotations["importance"] == {"value": 5.0}
    assert note.annotations["triage"] == {"label": "other", "urgency": 1}
    assert note.scores == {"importance": 5.0, "urgency": 1.0, "reviewed": 1.0}
    assert note.annotation_meta["importance"]["status"] == "default"
    assert note.annotation_meta["triage"]["status"] == "default"
    assert note.enrichment_error["importance"]["code"] == "provider_invalid"
    assert "output schema" in note.enrichment_error["triage"]["detail"]
    assert len(server.chat_requests()) == 4


def test_provider_failure_on_the_final_attempt_writes_defaults(llm_catalog, server):
    server.chat_default = Status(500)
    note = pending_record(llm_catalog, collection="notes", text="Anything.", type="call")
    records_enrich(record_ids=[note.id])
    note.refresh_from_db()
    assert note.ready
    assert note.annotations["importance"] == {"value": 5.0}
    assert note.enrichment_error["importance"]["code"] == "provider_transport"
    # An optional json processor without default_output gets a terminal marker, no value.
    assert note.annotation_meta["gist"]["status"] == "failed"
    assert "gist" not in note.annotations
    assert len(server.chat_requests()) == 3  # transport failures are not "corrected"


def test_transient_failure_before_the_final_attempt_defers_only_what_failed(llm_catalog, server):
    server.chat.extend([{"score": 8}, Status(503)])
    note = pending_record(llm_catalog, collection="notes", text="Partial.")
    with pytest.raises(EnrichmentDeferred) as deferred:
        records_enrich(record_ids=[note.id], final_attempt=False)
    assert deferred.value.record_ids == [str(note.id)]
    note.refresh_from_db()
    assert not note.ready  # triage (required) has not written yet
    assert set(note.annotation_meta) == {"importance", "reviewed"}
    server.chat.append({"label": "praise", "urgency": 1})
    records_enrich(record_ids=[note.id], final_attempt=False)
    note.refresh_from_db()
    assert note.ready
    assert note.scores["importance"] == 8.0 and note.annotations["triage"]["label"] == "praise"
    assert len(server.chat_requests()) == 3  # importance was not asked again


def test_existing_annotation_meta_entries_are_never_recomputed(llm_catalog, server):
    client_meta = {"status": "ok", "source": "client", "output_hash": "x"}
    note = pending_record(llm_catalog, collection="notes", text="Keep my score.", scores={"importance": 9.0},
                          annotations={"importance": {"value": 9.0}}, annotation_meta={"importance": client_meta})
    server.chat.append({"label": "other", "urgency": 3})
    records_enrich(record_ids=[note.id])
    note.refresh_from_db()
    assert note.annotations["importance"] == {"value": 9.0}
    assert note.annotation_meta["importance"] == client_meta
    assert [r.body["response_format"]["json_schema"]["name"] for r in server.chat_requests()] == ["triage"]
    assert note.ready


def test_the_write_itself_refuses_to_overwrite_a_written_processor(llm_catalog, server):
    """Even a writer working from a stale plan (its read predates another commit) changes nothing."""
    server.chat.extend([{"score": 2}, {"label": "billing", "urgency": 2}])
    note = pending_record(llm_catalog, collection="notes", text="Once only.")
    stale = enrichment._plan(Record.objects.select_related("workspace").get(id=note.id))
    records_enrich(record_ids=[note.id])
    note.refresh_from_db()
    before = (note.annotations, note.scores, note.annotation_meta, note.enrichment_error, note.enriched_at)
    processor = catalog_for_workspace(llm_catalog).value("processor", "importance")
    result = enrichment._score_result(processor, 9, "ok", error={"code": "x"})
    enrichment._write([(stale, {"importance": result}, True)], timezone.now().isoformat())  # "ready" from a stale plan
    note.refresh_from_db()
    assert (note.annotations, note.scores, note.annotation_meta, note.enrichment_error, note.enriched_at) == before


@pytest.mark.django_db(transaction=True)
def test_concurrent_runs_on_the_same_record_call_the_model_once(llm_catalog, server):
    release = threading.Event()
    server.chat.extend([Hang(release, then={"score": 6}), {"label": "other", "urgency": 2}])
    note = pending_record(llm_catalog, collection="notes", text="Two workers race for me.")
    first: dict = {}

    def run_first():
        try:
            first["outcome"] = records_enrich(record_ids=[note.id])
        finally:
            connection.close()

    worker = threading.Thread(target=run_first)
    worker.start()
    try:
        assert server.hang_started.wait(10)
        second = records_enrich(record_ids=[note.id])  # the row is locked by the first run
        assert second.skipped == [str(note.id)] and second.written == 0
    finally:
        release.set()
        worker.join(20)
    assert first["outcome"].ready == [str(note.id)]
    note.refresh_from_db()
    assert note.scores["importance"] == 6.0
    assert len(server.chat_requests()) == 2


# --- tasks, enqueueing and recovery -------------------------------------------------------------

def test_enqueue_enrichment_runs_the_task_after_commit(llm_catalog, server, django_capture_on_commit_callbacks):
    server.chat_default = lambda body: ({"score": 3} if body["response_format"]["json_schema"]["name"] == "importance"
                                        else {"label": "billing", "urgency": 5})
    notes = [pending_record(llm_catalog, collection="notes", text=f"Note {i}") for i in range(3)]
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        enqueue_enrichment([note.id for note in notes])
    assert Record.objects.filter(enriched_at__isnull=True).count() == 3  # nothing before commit
    for callback in callbacks:
        callback()
    assert Record.objects.filter(enriched_at__isnull=True).count() == 0
    assert {r.scores["urgency"] for r in Record.objects.all()} == {5.0}


def test_enqueue_enrichment_splits_into_tasks_of_enrich_batch(llm_catalog, django_capture_on_commit_callbacks,
                                                              settings):
    settings.MEMSEEK = {"ENRICH_BATCH": 2}
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        enqueue_enrichment([f"00000000-0000-0000-0000-00000000000{i}" for i in range(5)])
    assert [callback.args[0] for callback in callbacks] == [
        ["00000000-0000-0000-0000-000000000000", "00000000-0000-0000-0000-000000000001"],
        ["00000000-0000-0000-0000-000000000002", "00000000-0000-0000-0000-000000000003"],
        ["00000000-0000-0000-0000-000000000004"]]


def test_task_retries_a_failing_provider_then_writes_defaults(llm_catalog, server):
    server.chat_default = Status(502)
    note = pending_record(llm_catalog, collection="notes", text="Provider is down.")
    enrich_records.delay([str(note.id)])
    note.refresh_from_db()
    assert note.ready
    assert note.annotation_meta["importance"]["status"] == "default"
    assert note.annotation_meta["triage"]["status"] == "default"
    # Two llm processors per attempt, the first try plus every retry.
    assert len(server.chat_requests()) == 2 * (enrich_records.max_retries + 1)


def test_task_recovers_when_the_provider_comes_back_during_retries(llm_catalog, server):
    server.chat.extend([Status(500), Status(500), {"score": 9}, {"label": "praise", "urgency": 1}])
    note = pending_record(llm_catalog, collection="notes", text="Flaky provider.")
    enrich_records.delay([str(note.id)])
    note.refresh_from_db()
    assert note.ready
    assert note.annotation_meta["importance"]["status"] == "ok"
    assert note.scores["importance"] == 9.0


def test_recovery_task_re_enqueues_only_records_pending_long_enough(llm_catalog, server, settings):
    settings.MEMSEEK = {"PENDING_RECOVERY_AGE_S": 60}
    server.chat_default = lambda body: ({"score": 4} if body["response_format"]["json_schema"]["name"] == "importance"
                                        else {"label": "other", "urgency": 2})
    old = pending_record(llm_catalog, collection="notes", text="Left behind by a killed worker.", age_s=120)
    fresh = pending_record(llm_catalog, collection="notes", text="Still being enriched.", age_s=1)
    assert recover_pending_records.delay().get() == 1
    old.refresh_from_db()
    fresh.refresh_from_db()
    assert old.ready and not fresh.ready


def test_recovery_task_re_enqueues_only_the_records_inserted_in_its_window(llm_catalog, server):
    server.chat_default = lambda body: ({"score": 4} if body["response_format"]["json_schema"]["name"] == "importance"
                                        else {"label": "other", "urgency": 2})
    before = pending_record(llm_catalog, collection="notes", text="Scanned by an earlier window.", age_s=300)
    inside = pending_record(llm_catalog, collection="notes", text="Turned old since the last window.", age_s=100)
    after = pending_record(llm_catalog, collection="notes", text="Not old enough yet.", age_s=10)
    now = timezone.now()
    window = {"created_after": (now - timedelta(seconds=200)).isoformat(),
              "created_until": (now - timedelta(seconds=50)).isoformat()}
    assert recover_pending_records.delay(**window).get() == 1
    assert [Record.objects.get(id=record.id).ready for record in (before, inside, after)] == [False, True, False]


def test_enrich_pending_command_enriches_in_process(llm_catalog, server, capsys):
    server.chat_default = Status(500)
    old = pending_record(llm_catalog, collection="notes", text="Pending since yesterday.", age_s=86400)
    fresh = pending_record(llm_catalog, collection="notes", text="Just arrived.")
    call_command("enrich_pending")
    old.refresh_from_db()
    fresh.refresh_from_db()
    assert old.ready and old.annotation_meta["importance"]["status"] == "default"
    assert not fresh.ready
    assert "1 pending record(s): 1 now ready" in capsys.readouterr().out
    call_command("enrich_pending", "--older-than", "0")
    fresh.refresh_from_db()
    assert fresh.ready


# --- pooling (workers take other pending records along) -----------------------------------------

@pytest.mark.model
def test_an_eager_task_pays_only_for_its_own_records(catalog, settings):
    settings.MEMSEEK = {"ENRICH_POOL": 50}
    asked = pending_record(catalog, collection="main", text="Asked for.")
    other = pending_record(catalog, collection="main", text="Someone else's record.")
    enrich_records.delay([str(asked.id)])
    asked.refresh_from_db()
    other.refresh_from_db()
    assert asked.ready and not other.ready
