"""A test-only Celery task that overruns its hard time limit, loaded by a test's worker with
``--include tests.catalog_app.overrun_task`` (tests/catalog_app/test_worker_time_limits.py).

It is a Memseek task in every way that matters to the queue (``DeadLetteringTask``, late
acknowledgement, requeue on a lost worker, sent to the enrichment queue) but survives its soft
limit: it catches ``SoftTimeLimitExceeded`` and keeps waiting, as a task stuck where the soft
limit cannot end it does (native code, a handler that swallows the exception). Only the hard
limit, the pool process's kill, ends it.
"""
import time

from billiard.exceptions import SoftTimeLimitExceeded
from celery import shared_task

from catalog_app.task_base import DeadLetteringTask

NAME = "tests.catalog_app.overrun_task.sleep_past_the_soft_limit"


@shared_task(base=DeadLetteringTask, name=NAME, acks_late=True, reject_on_worker_lost=True)
def sleep_past_the_soft_limit(seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            time.sleep(0.1)
        except SoftTimeLimitExceeded:
            continue
