"""What ``GET /health`` reports beyond database liveness: each queue's depth and oldest
message's age, the records waiting for enrichment and the lexical index's pending rows, and
which of them are past their thresholds (``HEALTH_*`` settings, docs/queues.md).

Cheap by contract, since a load balancer calls it every few seconds: one Redis round trip (with
a one-second timeout), three index-bounded queries and one over the pending runtime switches
(one row per workspace that is switching); the counts stop one past their threshold.
Counts and ages only: nothing names a workspace, a record or a task's arguments.
"""
from __future__ import annotations

from django.conf import settings
from django.db import connection
from django.utils import timezone

from memseek_site.conf import memseek_setting
from memseek_site.queues import BrokerUnavailable, queue_depths


def health_checks() -> tuple[dict, dict, list[dict]]:
    """``(queues, backlog, degraded)``: the queue report, the backlog report, and one entry per
    figure past its threshold (``check``: the dotted path of the figure in the report,
    ``value``, ``limit``, ``why``). Raises what the database raises."""
    degraded: list[dict] = []
    return _queues(degraded), _backlog(degraded), degraded


def _queues(degraded: list[dict]) -> dict:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return {"broker": "eager"}  # no broker: tasks run in the process that enqueued them
    try:
        depths = queue_depths(settings.CELERY_BROKER_URL)
    except (BrokerUnavailable, ValueError) as error:
        degraded.append({"check": "queues.broker", "value": "unreachable", "limit": None,
                         "why": f"the broker did not answer: {getattr(error, 'detail', error)}"})
        return {"broker": "unreachable"}
    report: dict = {"broker": "redis"}
    max_depth, max_age = memseek_setting("HEALTH_QUEUE_MAX_DEPTH"), memseek_setting("HEALTH_QUEUE_MAX_AGE_S")
    for queue in depths:
        age = None if queue.oldest_age_s is None else round(queue.oldest_age_s, 1)
        report[queue.queue] = {"depth": queue.depth, "oldest_age_s": age}
        _over(degraded, f"queues.{queue.queue}.depth", queue.depth, max_depth, "messages waiting")
        _over(degraded, f"queues.{queue.queue}.oldest_age_s", age, max_age, "seconds since its oldest message was sent")
    return report


_PENDING_COUNT = ("SELECT count(*) FROM (SELECT 1 FROM catalog_app_record WHERE enriched_at IS NULL LIMIT %s) AS p")
_OLDEST_PENDING = ("SELECT created_at FROM catalog_app_record WHERE enriched_at IS NULL ORDER BY seq LIMIT 1")
_LEXICAL_PENDING_COUNT = "SELECT count(*) FROM (SELECT 1 FROM catalog_app_lexical_pending LIMIT %s) AS p"
# Pending runtime switches (catalog_app.embedding_serving): summed, so no workspace is named.
_REEMBEDDING = ("SELECT count(*), coalesce(sum(records_done), 0), "
                "coalesce(sum(greatest(records_total, records_done)), 0) "
                "FROM catalog_app_embeddingswitch WHERE target_runtime IS NOT NULL")


def _backlog(degraded: list[dict]) -> dict:
    max_records, max_age = memseek_setting("HEALTH_PENDING_MAX_RECORDS"), memseek_setting("HEALTH_PENDING_MAX_AGE_S")
    max_rows = memseek_setting("HEALTH_LEXICAL_PENDING_MAX_ROWS")
    with connection.cursor() as cursor:
        # Both record queries walk the partial index of unready records (record_pending).
        cursor.execute(_PENDING_COUNT, [max_records + 1])
        pending = cursor.fetchone()[0]
        cursor.execute(_OLDEST_PENDING)
        oldest = cursor.fetchone()
        cursor.execute(_LEXICAL_PENDING_COUNT, [max_rows + 1])
        lexical = cursor.fetchone()[0]
        cursor.execute(_REEMBEDDING)
        switching, done, total = cursor.fetchone()
    age = None if oldest is None else round(max(0.0, (timezone.now() - oldest[0]).total_seconds()), 1)
    _over(degraded, "backlog.pending_records", pending, max_records, "records waiting for enrichment")
    _over(degraded, "backlog.oldest_pending_age_s", age, max_age, "seconds the oldest unready record has waited")
    _over(degraded, "backlog.lexical_pending_rows", lexical, max_rows, "lexical rows waiting for compaction")
    return {"pending_records": pending, "oldest_pending_age_s": age, "lexical_pending_rows": lexical,
            "reembedding": {"workspaces": switching, "records_done": int(done), "records_total": int(total)}}


def _over(degraded: list[dict], check: str, value, limit, what: str) -> None:
    if value is not None and value > limit:
        degraded.append({"check": check, "value": value, "limit": limit, "why": f"{value} {what}, more than {limit}"})
