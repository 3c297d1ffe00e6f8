"""The worker's recovery of records left unready (a consumer bootstep, added in ``signals``).

A record is unready until a task enriches it, and its task can be lost: its worker was killed
(the message waits out the broker's visibility timeout) or the broker lost it (a Redis that keeps
nothing on disk forgets every queued message when it restarts). So while a worker is connected
to the broker its main process sends ``recover_pending_records`` every
``PENDING_RECOVERY_INTERVAL_S``, each time for the records that turned ``PENDING_RECOVERY_AGE_S``
old since its previous one. A record whose task was lost is so re-enqueued within the age and one
interval, and each worker re-enqueues a record once however long it stays unready (one behind a
backlog, or waiting out a provider's retry backoff, gets one more task per worker, not one per
tick; that task finds it done, or retries on its own backoff). On every (re)connection the first
scan takes every record of that age, since a lost connection may be a restarted broker.

The main process only sends tasks: it must not open database connections that its forked pool
processes would inherit. Its clock frames the windows, so clock skew between hosts only delays
a recovery. A send that fails (the broker is away) is retried by the next tick, whose window
then reaches back to the last one sent.
"""
from __future__ import annotations

import logging
from datetime import datetime, timedelta

from celery import bootsteps
from django.utils import timezone
from kombu.exceptions import OperationalError

from memseek_site.conf import memseek_setting

logger = logging.getLogger(__name__)


class PendingRecovery(bootsteps.StartStopStep):
    """Sends ``recover_pending_records`` at consumer start and then every
    ``PENDING_RECOVERY_INTERVAL_S`` on the worker's event-loop timer, until the consumer stops
    (a lost broker connection stops and restarts it)."""

    requires = ("celery.worker.consumer.tasks:Tasks",)

    def __init__(self, parent, **kwargs):
        super().__init__(parent, **kwargs)
        self.entry = None
        self.swept_until: datetime | None = None

    def start(self, parent):
        self.swept_until = None
        self.send()
        self.entry = parent.timer.call_repeatedly(memseek_setting("PENDING_RECOVERY_INTERVAL_S"), self.send)

    def stop(self, parent):
        if self.entry is not None:
            parent.timer.cancel(self.entry)
            self.entry = None

    def send(self) -> None:
        from .tasks import recover_pending_records

        until = timezone.now() - timedelta(seconds=memseek_setting("PENDING_RECOVERY_AGE_S"))
        after = None if self.swept_until is None else self.swept_until.isoformat()
        try:
            recover_pending_records.apply_async(kwargs={"created_after": after, "created_until": until.isoformat()})
        except OperationalError as error:
            logger.warning("could not send the recovery of pending records (the next one covers them): %s", error)
            return
        self.swept_until = until
