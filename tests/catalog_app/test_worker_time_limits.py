"""A task killed by its hard time limit on a real Celery worker (prefork, one pool process):
its message is acknowledged, it becomes a dead letter, and the enrichment queued behind it in
the same queue finishes within a stated bound (docs/queues.md, "Time limits").

The overrunning task is test-only (``tests/catalog_app/overrun_task.py``, loaded with the
worker's ``--include``): no Memseek task survives its soft limit on purpose, and in the prefork
pool the hard limit only acts once the soft one has passed. The task behind it is the real
``enrich_records`` with the real model.

Skipped only when no Redis answers on 127.0.0.1:6379 (CI provides one).
"""
import time

import pytest

from catalog_app.models import DeadLetter, RecordEmbedding
from memseek_site.queues import ENRICHMENT
from tests.catalog_app.factories import pending_record
from tests.catalog_app.overrun_task import NAME as OVERRUN
from tests.catalog_app.test_worker import (  # noqa: F401 (fixtures)
    TASK, broker, producer, ready, start_with_model, wait_for, workers)

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

SOFT_LIMIT_S, HARD_LIMIT_S = 2, 4
# From the kill to the end of the task behind it: the pool starts a new process, which loads the
# embedding model (about 10 s on a busy two-core machine) and enriches two records.
BEHIND_BOUND_S = 60


@pytest.mark.model
def test_a_task_behind_one_killed_by_its_hard_time_limit_finishes(catalog, workers, producer, broker):
    start_with_model(workers, args=("--include=tests.catalog_app.overrun_task",))
    log = workers.logs[-1]
    overrun = producer.send_task(OVERRUN, args=[120], queue=ENRICHMENT, soft_time_limit=SOFT_LIMIT_S,
                                 time_limit=HARD_LIMIT_S)
    wait_for(lambda: f"{OVERRUN}[{overrun.id}] received" in log.read_text(), 30, "the worker to take the task",
             workers.logs)
    behind = [str(pending_record(catalog, collection="main", text=text).id)
              for text in ("The parcel arrived damaged.", "Please send a replacement.")]
    producer.send_task(TASK, args=[behind])
    assert broker.llen(ENRICHMENT) == 1  # waiting behind the overrunning task (prefetch 1, one pool process)

    wait_for(lambda: "Hard time limit" in log.read_text(), HARD_LIMIT_S + 30, "the hard time limit to kill the task",
             workers.logs)
    killed_at = time.monotonic()
    assert f"Soft time limit ({SOFT_LIMIT_S}s) exceeded for {OVERRUN}[{overrun.id}]" in log.read_text()
    wait_for(lambda: ready(behind), BEHIND_BOUND_S, "the task queued behind the killed one to finish", workers.logs)
    assert time.monotonic() - killed_at < BEHIND_BOUND_S
    assert RecordEmbedding.objects.filter(record_id__in=behind, space="minilm-l6-v2").count() == 2

    # The killed task is one dead letter, written by a maintenance task for the worker's main
    # process (which does not know the tries), and its message is acknowledged, not requeued.
    wait_for(lambda: DeadLetter.objects.exists(), 30, "the dead letter of the killed task", workers.logs)
    time.sleep(1)  # a second letter (the pool process's own, or a redelivery's) would show by now
    [letter] = DeadLetter.objects.all()
    assert (letter.task_name, letter.task_id, letter.args, letter.tries) == (OVERRUN, overrun.id, [120], None)
    assert letter.error.startswith("TimeLimitExceeded")
    assert broker.llen(ENRICHMENT) == 0
    assert broker.hlen("unacked") == 0
    assert log.read_text().count(f"{OVERRUN}[{overrun.id}] received") == 1


@pytest.mark.parametrize("soft", [0, HARD_LIMIT_S + 1])
def test_a_worker_whose_soft_limit_would_delay_the_hard_one_stops_at_start(workers, soft):
    with pytest.raises(AssertionError, match="the worker exited"):
        workers.start(ENRICH_SOFT_TIME_LIMIT_S=soft, ENRICH_TIME_LIMIT_S=HARD_LIMIT_S)
    assert (f"ENRICH_SOFT_TIME_LIMIT_S must be more than 0 and at most ENRICH_TIME_LIMIT_S ({HARD_LIMIT_S}), "
            f"not {soft}") in workers.logs[-1].read_text()
    assert " ready." not in workers.logs[-1].read_text()
