"""Touch on read: returned records get ``last_accessed`` updated after the response's scores
are final. Best effort: a failure is logged and never fails the search."""
from __future__ import annotations

import logging
from collections.abc import Iterable
from functools import partial

from celery import shared_task
from django.db import transaction

from .services import records_touch

logger = logging.getLogger(__name__)


@shared_task(name="search_app.tasks.touch_records", ignore_result=True)
def touch_records(record_ids: list[str]) -> int:
    return records_touch(record_ids=record_ids)


def enqueue_touch(record_ids: Iterable) -> None:
    """Send ``touch_records`` once any surrounding transaction commits; failures are logged."""
    ids = [str(record_id) for record_id in record_ids]
    if not ids:
        return
    try:
        transaction.on_commit(partial(_send, ids), robust=True)
    except Exception:  # best effort by contract: never fail a read because of the touch
        logger.exception("could not schedule touch_records")


def _send(ids: list[str]) -> None:
    try:
        touch_records.delay(ids)
    except Exception:
        logger.exception("touch_records for %d record(s) failed", len(ids))
