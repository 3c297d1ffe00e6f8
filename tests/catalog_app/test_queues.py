"""The named queues with real workers against Redis (``docs/queues.md``): a poison task is
dead-lettered and the queue behind it drains, a task delivered twice changes nothing the second
time, and ``/health`` turns degraded over a stopped queue whose backlog ages, then recovers.

Skipped only when no Redis answers on 127.0.0.1:6379 (CI provides one).
"""
import time
import uuid

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from catalog_app.models import DeadLetter, Record, RecordEmbedding
from memseek_site.queues import ENRICHMENT, LEXICAL
from tests.catalog_app.factories import pending_record
from tests.catalog_app.test_worker import (  # noqa: F401  fixtures
    BROKER_URL, TASK, broker, chat_server, llm_workspace, producer, ready, release_hang, start_with_model, wait_for,
    workers,
)

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

NO_RECOVERY = {"PENDING_RECOVERY_AGE_S": 3600}  # only the tasks the test sends finish records


def drained(broker, queue: str) -> bool:
    return broker.llen(queue) == 0 and broker.hlen("unacked") == 0


@pytest.mark.model
def test_a_poison_task_is_dead_lettered_and_the_queue_behind_it_drains(catalog, workers, producer, broker):
    behind = str(pending_record(catalog, collection="main", text="The parcel arrived damaged.").id)
    producer.send_task(TASK, args=[["not-a-record-id"]])  # fails the same way however often it runs
    producer.send_task(TASK, args=[[behind]])
    assert broker.llen(ENRICHMENT) == 2
    workers.start(queues="enrichment,maintenance", **NO_RECOVERY)
    wait_for(lambda: ready([behind]), 90, "the task behind the poison to finish its record", workers.logs)
    letter = DeadLetter.objects.get()
    assert (letter.task_name, letter.queue, letter.args, letter.tries) == (TASK, ENRICHMENT, [["not-a-record-id"]], 1)
    assert letter.error.startswith("ValidationError")
    wait_for(lambda: drained(broker, ENRICHMENT), 10, "the poison's message to be acknowledged", workers.logs)


@pytest.mark.model
def test_a_task_past_its_hard_time_limit_is_dead_lettered(llm_workspace, workers, producer, broker, chat_server):
    hung = str(pending_record(llm_workspace, collection="memos", text="The model never answers this one.").id)
    # The model loaded first, and limits long enough for the task to reach its chat call on a busy
    # machine (the embedding comes before it): the hang, not the embedding, must overrun them.
    start_with_model(workers, queues="enrichment,maintenance", ENRICH_TIME_LIMIT_S=15, ENRICH_SOFT_TIME_LIMIT_S=15,
                     **NO_RECOVERY)
    producer.send_task(TASK, args=[[hung]])
    assert chat_server.hang_started.wait(60), "the worker never called the model"
    wait_for(lambda: DeadLetter.objects.exists(), 60, "the dead letter of the hung task", workers.logs)
    letter = DeadLetter.objects.get()
    assert (letter.task_name, letter.args, letter.tries) == (TASK, [[hung]], None)
    assert letter.error.startswith("TimeLimitExceeded")
    assert not ready([hung])  # killed mid-transaction: nothing of it was committed
    wait_for(lambda: drained(broker, ENRICHMENT), 10, "the hung task's message to be acknowledged", workers.logs)


def deliver_twice(producer, workers, name: str, args: list) -> None:
    """Send the same message (same task id and arguments) twice and wait until a worker has run
    both deliveries."""
    task_id = str(uuid.uuid4())
    for _ in range(2):
        producer.send_task(name, args=args, task_id=task_id)
    log = workers.logs[-1]
    wait_for(lambda: log.read_text().count(f"[{task_id}] succeeded") == 2, 90, "both deliveries to run", workers.logs)


def enrichment_state(ids) -> list:
    records = list(Record.objects.filter(id__in=ids).order_by("id").values_list(
        "id", "scores", "annotations", "annotation_meta", "enriched_at", "enrichment_error"))
    embeddings = [(row.record_id, row.space, list(row.embedding))
                  for row in RecordEmbedding.objects.filter(record_id__in=ids).order_by("record_id", "space")]
    return [records, embeddings]


@pytest.mark.model
def test_an_enrichment_delivered_twice_changes_nothing_the_second_time(catalog, workers, producer):
    ids = [str(pending_record(catalog, collection="main", text=f"Parcel {n} arrived damaged.").id) for n in range(3)]
    workers.start(queues="enrichment", **NO_RECOVERY)
    task_id = str(uuid.uuid4())
    producer.send_task(TASK, args=[ids], task_id=task_id)
    wait_for(lambda: ready(ids), 90, "the first delivery to finish the records", workers.logs)
    first = enrichment_state(ids)
    producer.send_task(TASK, args=[ids], task_id=task_id)
    log = workers.logs[-1]
    wait_for(lambda: log.read_text().count(f"[{task_id}] succeeded") == 2, 60, "the second delivery", workers.logs)
    assert enrichment_state(ids) == first


def test_a_touch_delivered_twice_counts_one_read(catalog, workers, producer):
    ids = [str(pending_record(catalog, collection="main", text=f"Read me {n}.", age_s=60).id) for n in range(2)]
    read_at = "2026-01-02T03:04:05+00:00"
    workers.start(queues="maintenance", **NO_RECOVERY)
    deliver_twice(producer, workers, "catalog_app.tasks.touch_records", [ids, read_at])
    rows = list(Record.objects.filter(id__in=ids).values_list("access_count", "last_accessed"))
    assert [(count, stamp.isoformat()) for count, stamp in rows] == [(1, read_at)] * 2


def health() -> dict:
    response = APIClient().get("/health")
    assert response.status_code == 200
    return response.json()


AGE_LIMIT_S = 2


def test_health_turns_degraded_over_a_stopped_queue_whose_backlog_ages_and_recovers_when_it_drains(
        catalog, workers, producer, broker, settings):
    settings.MEMSEEK = {"HEALTH_QUEUE_MAX_AGE_S": AGE_LIMIT_S}
    with override_settings(CELERY_TASK_ALWAYS_EAGER=False, CELERY_BROKER_URL=BROKER_URL):
        idle = health()
        assert (idle["status"], idle["queues"][LEXICAL]) == ("ok", {"depth": 0, "oldest_age_s": None})
        # No worker consumes the lexical queue: its compactions wait there.
        for _ in range(3):
            producer.send_task("catalog_app.tasks.compact_lexical_index", args=[catalog.id])
        sent = time.time()
        young = health()
        assert young["queues"][LEXICAL]["depth"] == 3
        assert young["queues"][LEXICAL]["oldest_age_s"] <= time.time() - sent + 0.1
        wait_for(lambda: time.time() - sent > AGE_LIMIT_S + 0.5, 10, "the backlog to age past the limit")
        wedged = health()
        assert wedged["status"] == "degraded"
        assert [entry["check"] for entry in wedged["degraded"]] == [f"queues.{LEXICAL}.oldest_age_s"]
        assert wedged["queues"][LEXICAL]["oldest_age_s"] > AGE_LIMIT_S
        assert wedged["queues"][ENRICHMENT] == {"depth": 0, "oldest_age_s": None}
        workers.start(queues=LEXICAL)
        wait_for(lambda: health()["status"] == "ok", 60, "/health to recover as the queue drains", workers.logs)
        assert health()["queues"][LEXICAL] == {"depth": 0, "oldest_age_s": None}
