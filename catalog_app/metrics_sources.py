"""The catalog's gauges for ``GET /metrics``, read at scrape time
(``memseek_site.metrics.gauge_source``): the enrichment backlog and the lexical index's
compaction backlog from the database (counts over every workspace, each one statement on a
partial or primary-key index), and each Celery queue's depth and oldest age from the broker."""
from __future__ import annotations

from collections.abc import Mapping

from django.conf import settings
from django.db import connection

from memseek_site.metrics import gauge_source
from memseek_site.queues import QueueDepth, queue_depths

from .lexical.tables import PENDING
from .models import Record

RECORD = Record._meta.db_table


@gauge_source("memseek_enrichment_backlog_records", "Records written but not yet enriched (not ready).")
def enrichment_backlog() -> dict[tuple[str, ...], float]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {RECORD} WHERE enriched_at IS NULL")
        return {(): cursor.fetchone()[0]}


@gauge_source("memseek_enrichment_backlog_oldest_age_seconds",
              "Age of the oldest record not yet enriched (0 when none is waiting).")
def enrichment_backlog_age() -> dict[tuple[str, ...], float]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT coalesce(extract(epoch FROM now() - min(created_at)), 0) FROM {RECORD} "
                       "WHERE enriched_at IS NULL")
        return {(): float(cursor.fetchone()[0])}


@gauge_source("memseek_lexical_pending_rows",
              "Logged posting changes of the lexical index not yet folded into its blocks by a compaction.")
def lexical_pending_rows() -> dict[tuple[str, ...], float]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {PENDING}")
        return {(): cursor.fetchone()[0]}


def _broker_queues() -> list[QueueDepth]:
    """Each Celery queue's depth and oldest age on the configured Redis broker; none without a
    broker (tasks run in the request)."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return []
    return queue_depths(settings.CELERY_BROKER_URL)


@gauge_source("memseek_queue_depth", "Messages waiting in each Celery queue (none without a broker).", ["queue"])
def queue_depth() -> Mapping[tuple[str, ...], float]:
    return {(row.queue,): row.depth for row in _broker_queues()}


@gauge_source("memseek_queue_oldest_age_seconds", "Age of the oldest message in each Celery queue (0 when it is "
              "empty; none without a broker).", ["queue"])
def queue_oldest_age() -> Mapping[tuple[str, ...], float]:
    return {(row.queue,): row.oldest_age_s or 0.0 for row in _broker_queues()}
