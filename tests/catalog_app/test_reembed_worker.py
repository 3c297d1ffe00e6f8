"""A re-embedding job on a real Celery worker (Redis, the test database, the real model),
SIGKILLed mid-job: the batches it committed stay, the broker redelivers the unacknowledged task
after the visibility timeout, and a new worker finishes the job from where it stopped and swaps
the workspace to the new runtime.

Skipped only when no Redis answers on 127.0.0.1:6379 (CI provides one)."""
import time

import numpy
import pytest

from catalog_app.models import EmbeddingSwitch, RecordEmbedding
from tests.catalog_app.test_worker import broker, producer, start_with_model, wait_for, workers  # noqa: F401
from tests.search_app.search_factories import ingest_ready, item

pytestmark = [pytest.mark.worker, pytest.mark.model, pytest.mark.django_db(transaction=True)]

RECORDS, BATCH = 240, 2
# Redelivery of the killed worker's task, and no start-up recovery scan of pending records.
ENV = {"CELERY_VISIBILITY_TIMEOUT": 5, "PENDING_RECOVERY_AGE_S": 3600, "EMBEDDING_RUNTIME": "torch"}
TARGET = "minilm-l6-v2.onnx"


def in_space(space: str) -> int:
    return RecordEmbedding.objects.filter(space=space).count()


def test_a_killed_reembedding_worker_is_resumed_by_the_next_and_every_record_gets_one_new_vector(
        catalog, workers, producer, broker):  # noqa: F811
    ids = ingest_ready(catalog, [item(f"Ticket {n}: the invoice of order {n * 7} was charged twice")
                                 for n in range(RECORDS)])
    first = start_with_model(workers, **ENV)
    producer.send_task("catalog_app.tasks.reembed_workspace", args=[catalog.pk, "onnx", BATCH])
    wait_for(lambda: in_space(TARGET) >= 10, 120, "the job to commit its first batches", workers.logs)
    workers.kill(first)
    at_kill = in_space(TARGET)
    assert 10 <= at_kill < RECORDS, at_kill  # killed mid-job
    assert at_kill % BATCH == 0  # whole batches only: the open one rolled back
    assert broker.hlen("unacked") == 1  # the task was not acknowledged
    switch = EmbeddingSwitch.objects.get(workspace=catalog)
    assert (switch.serving_runtime, switch.target_runtime, switch.records_done) == ("torch", "onnx", at_kill)

    delivered = broker.zrange("unacked_index", 0, 0, withscores=True)
    wait_for(lambda: time.time() - delivered[0][1] > ENV["CELERY_VISIBILITY_TIMEOUT"], 30,
             "the visibility timeout to pass")
    workers.start(**ENV)
    wait_for(lambda: in_space(TARGET) == RECORDS, 180, "the redelivered job to finish", workers.logs)
    # The second run wrote only what the first had not: its log counts the rest.
    wait_for(lambda: f"re-embedded {RECORDS - at_kill} record(s)" in workers.logs[-1].read_text(), 30,
             "the second run's summary", workers.logs)
    old = dict(RecordEmbedding.objects.filter(space="minilm-l6-v2").values_list("record_id", "embedding"))
    new = dict(RecordEmbedding.objects.filter(space=TARGET).values_list("record_id", "embedding"))
    assert set(new) == set(old) == set(ids)
    assert min(float(numpy.array(old[r]) @ numpy.array(new[r])) for r in ids) > 0.9999
    wait_for(lambda: EmbeddingSwitch.objects.get(workspace=catalog).target_runtime is None, 60, "the swap",
             workers.logs)
    switch = EmbeddingSwitch.objects.get(workspace=catalog)
    assert (switch.serving_runtime, switch.records_done, switch.records_total) == ("onnx", RECORDS, RECORDS)
