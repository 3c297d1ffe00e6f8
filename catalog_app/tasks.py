"""Celery tasks. Each takes ids, calls one service, and retries transient failures with
exponential backoff; they are enqueued only after the writing transaction commits. The touch
on read is the exception: best effort by contract, it is logged and dropped on failure.

With acks_late and reject-on-worker-lost, a task that was running when its worker died goes
back to the broker (Redis redelivers it after the visibility timeout). Sooner than that, and
for messages the broker lost, every worker re-enqueues records left unready
(``recover_pending_records``, sent by its main process: see ``recovery``).

Queues and time limits are given by ``memseek_site.queues``. Every task is idempotent: a
message delivered twice changes nothing the second time (enrichment skips ready records,
compaction finds nothing left to fold, a touch checks its ``TaskReceipt``). A task that fails
for good, after its bounded retries or at once for an error that is not retried, is written to
the ``DeadLetter`` table and acknowledged, so it never blocks the queue behind it.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime, timedelta
from functools import partial

from django.db import DEFAULT_DB_ALIAS, IntegrityError, InterfaceError, OperationalError, transaction
from django.utils import timezone

from memseek_site.conf import memseek_setting
from memseek_site.replicas import serving

from .embedding import EmbeddingUnavailable
from .lexical import compaction_task  # noqa: F401 (its task is registered with the others)
from .services.enrichment import EnrichmentDeferred, records_enrich, records_recover_pending
from .models import EmbeddingSwitch, Workspace
from .services.record_touch import records_touch
from .services.reembed import reembed_switch
from .task_base import memseek_task

logger = logging.getLogger(__name__)

_TRANSIENT = (EnrichmentDeferred, OperationalError, InterfaceError)


@memseek_task(bind=True, name="catalog_app.tasks.enrich_records", acks_late=True, reject_on_worker_lost=True,
                    autoretry_for=_TRANSIENT, max_retries=5, retry_backoff=5, retry_backoff_max=300, retry_jitter=True)
def enrich_records(self, record_ids: list[str]) -> dict:
    """Enrich the records ``record_ids`` (``records_enrich``). On the last allowed attempt
    transient provider failures write defaults instead of retrying, so no record stays unready.
    A worker first drains the pending pool in claims of similar text length from the
    ``ENRICH_POOL`` oldest pending records, while any of its own records waits there (not when
    running eagerly inside a request, which should only pay for its own records)."""
    pool = 0 if self.request.is_eager else memseek_setting("ENRICH_POOL")
    outcome = records_enrich(record_ids=record_ids, final_attempt=self.request.retries >= self.max_retries,
                             pool=pool)
    return outcome.summary()


@memseek_task(name="catalog_app.tasks.recover_pending_records", acks_late=True,
              autoretry_for=(OperationalError, InterfaceError), max_retries=3, retry_backoff=5)
def recover_pending_records(created_after: str | None = None, created_until: str | None = None) -> int:
    """Re-enqueue every record still unready that was inserted at or before ``created_until``
    (ISO 8601; default ``PENDING_RECOVERY_AGE_S`` ago) and, given ``created_after``, after it.
    Also forgets the task receipts older than ``TASK_RECEIPT_TTL_S``."""
    from .models import TaskReceipt

    expired = timezone.now() - timedelta(seconds=memseek_setting("TASK_RECEIPT_TTL_S"))
    TaskReceipt.objects.filter(finished_at__lt=expired).delete()
    count = records_recover_pending(dispatch=enrich_records.delay, created_after=_instant(created_after),
                                    created_until=_instant(created_until))
    if count:
        logger.info("re-enqueued enrichment of %d pending record(s)", count)
    return count


def _instant(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def enqueue_enrichment(record_ids: Iterable) -> None:
    """Enqueue enrichment of ``record_ids`` once the current transaction commits, in tasks of
    ``ENRICH_BATCH`` ids. A broker failure at that point is logged, not raised: the records stay
    unready and the workers' recovery (or ``manage.py enrich_pending``) picks them up."""
    ids = [str(record_id) for record_id in record_ids]
    size = memseek_setting("ENRICH_BATCH")
    for start in range(0, len(ids), size):
        transaction.on_commit(partial(enrich_records.delay, ids[start:start + size]), robust=True)


@memseek_task(name="catalog_app.tasks.reembed_workspace", acks_late=True, reject_on_worker_lost=True,
              autoretry_for=(*_TRANSIENT, EmbeddingUnavailable), max_retries=5, retry_backoff=5,
              retry_backoff_max=300)
def reembed_workspace(workspace_id: int, runtime: str, batch: int = 256) -> int:
    """Switch the workspace's vectors to ``runtime`` (``reembed_switch``); returns how many
    vectors this run wrote. Each batch commits, so a run killed with its worker is redelivered
    and resumes after the last committed batch. A run stops after half the enrichment queue's
    soft time limit and sends the rest as a new task, so no workspace is too large for the
    queue's limits."""
    outcome = reembed_switch(Workspace.objects.get(pk=workspace_id), runtime, batch=batch,
                             stop_after_s=memseek_setting("ENRICH_SOFT_TIME_LIMIT_S") / 2)
    logger.info("re-embedded %d record(s) of workspace %d into %s%s", outcome.written, workspace_id,
                outcome.target_space, "; swapped" if outcome.swapped else "")
    # Unless another run has since swapped the workspace or replaced the target.
    pending = EmbeddingSwitch.objects.filter(workspace_id=workspace_id, target_runtime=runtime).exists()
    if not outcome.swapped and pending:
        reembed_workspace.delay(workspace_id, runtime, batch)
    return outcome.written


@memseek_task(bind=True, name="catalog_app.tasks.touch_records", ignore_result=True)
def touch_records(self, record_ids: list[str], read_at: str | None = None) -> int:
    """Touch the records ``record_ids`` as read at ``read_at`` (ISO 8601; default now) with
    ``records_touch``, once per task id: the touch and the task's ``TaskReceipt`` commit
    together, and a delivery that finds the receipt touches nothing (returns 0)."""
    from .models import TaskReceipt

    try:
        with transaction.atomic():
            TaskReceipt.objects.create(task_id=self.request.id)
            return records_touch(record_ids=record_ids, now=_instant(read_at))
    except IntegrityError:  # this task id already touched its records
        logger.info("touch_records[%s] was delivered again; nothing to do", self.request.id)
        return 0


def enqueue_touch(record_ids: Iterable) -> None:
    """When ``TOUCH_ON_READ`` is on, send ``touch_records`` for ``record_ids`` once any
    surrounding transaction commits, after the response's scores are final. Best effort: a
    failure is logged and never fails the read."""
    if not memseek_setting("TOUCH_ON_READ"):
        return
    ids = [str(record_id) for record_id in record_ids]
    if not ids:
        return
    try:
        transaction.on_commit(partial(_send_touch, ids), robust=True)
    except Exception:  # best effort by contract: never fail a read because of the touch
        logger.exception("could not schedule touch_records")


def _send_touch(ids: list[str]) -> None:
    try:
        with serving(DEFAULT_DB_ALIAS):  # a touch is a write: on the primary when a replica serves the read
            touch_records.delay(ids, timezone.now().isoformat())
    except Exception:
        logger.exception("touch_records for %d record(s) failed", len(ids))
