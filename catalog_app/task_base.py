"""The base of every Memseek Celery task (``DeadLetteringTask``, applied by ``memseek_task``) and
the task that writes a dead letter for a worker's main process. Its own module so that a module
defining a task imports no other task module (``catalog_app.tasks`` imports services that
import task modules in turn)."""
from __future__ import annotations

import logging
from functools import partial

from celery import Task, shared_task
from django.db import InterfaceError, OperationalError

logger = logging.getLogger(__name__)


class DeadLetteringTask(Task):
    """The base of every Memseek task: when a try fails for good (its retries are spent, the
    error is not one it retries, or it ran past its hard time limit) the task is recorded as a
    ``DeadLetter`` with its error and number of tries. Celery then acknowledges the message as
    failed (acks_late acknowledges failures and time-outs too), so the next message of the queue
    runs. A dead letter that cannot be written (the database is away) is logged instead."""

    def on_failure(self, exc, task_id, args, kwargs, einfo):
        letter = {"task_name": self.name, "task_id": task_id or "", "args": list(args or ()),
                  "kwargs": dict(kwargs or {}), "error": f"{type(exc).__name__}: {exc}"[:4000]}
        try:
            if self.request.id is None:
                # Not inside the task: the worker's main process, after killing the pool process
                # that ran past its hard time limit. It must not open database connections (its
                # next pool processes would inherit them), so a maintenance task writes the
                # letter; the main process does not know the retries, so ``tries`` stays unknown.
                record_dead_letter.delay(letter)
                return
            delivery = self.request.delivery_info or {}
            _write_dead_letter({**letter, "queue": delivery.get("routing_key") or "",
                                "tries": self.request.retries + 1})
        except Exception:  # the failure is already being reported; never mask it
            logger.exception("could not record the dead letter of %s[%s]", self.name, task_id)


def _write_dead_letter(letter: dict) -> None:
    from .models import DeadLetter

    DeadLetter.objects.create(**letter)


# The decorator of every Memseek task: ``shared_task`` with ``DeadLetteringTask`` as its base.
memseek_task = partial(shared_task, base=DeadLetteringTask)


@shared_task(name="catalog_app.tasks.record_dead_letter", ignore_result=True,
             autoretry_for=(OperationalError, InterfaceError), max_retries=5, retry_backoff=5)
def record_dead_letter(letter: dict) -> None:
    """Write ``letter`` (the ``DeadLetter`` fields) for a worker's main process. Its own base is
    Celery's: a dead letter that cannot be written is logged, never dead-lettered again."""
    _write_dead_letter(letter)
