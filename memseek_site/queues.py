"""The queue layout of the background work, its time limits, and the broker's queue depths.

Three named queues, each meant for workers of its own (``docs/queues.md``):

- ``enrichment``: model enrichment of new records, slow and CPU-bound;
- ``lexical``: compaction of the lexical index, short, and never queued behind enrichment;
- ``maintenance``: touch on read, the workers' recovery of pending records, and dead letters
  recorded for a worker's main process.

``TASK_ROUTES`` is the one place a task is given its queue (Celery's ``task_routes``, read by
``settings``); a task missing from it goes to ``DEFAULT_QUEUE``. Tasks are named by strings, so
this module imports no app. ``TaskTimeLimits`` gives each task its soft and hard time limit from
its settings. Every message carries its publication time in the ``PUBLISHED_AT_HEADER`` header
(set by ``stamp_publication_time`` on every publish from a process that imported this module),
from which ``queue_depths`` tells the age of each queue's oldest message.
"""
from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass

from celery.signals import before_task_publish, worker_init

logger = logging.getLogger(__name__)

ENRICHMENT, LEXICAL, MAINTENANCE = "enrichment", "lexical", "maintenance"
QUEUES = (ENRICHMENT, LEXICAL, MAINTENANCE)
DEFAULT_QUEUE = MAINTENANCE

TASK_ROUTES = {
    "catalog_app.tasks.enrich_records": {"queue": ENRICHMENT},
    "catalog_app.tasks.reembed_workspace": {"queue": ENRICHMENT},
    "catalog_app.tasks.compact_lexical_index": {"queue": LEXICAL},
    "catalog_app.tasks.touch_records": {"queue": MAINTENANCE},
    "catalog_app.tasks.recover_pending_records": {"queue": MAINTENANCE},
    "catalog_app.tasks.record_dead_letter": {"queue": MAINTENANCE},
}

# Task name -> (soft limit setting, hard limit setting), both in seconds (memseek_site.conf).
TIME_LIMIT_SETTINGS = {
    "catalog_app.tasks.enrich_records": ("ENRICH_SOFT_TIME_LIMIT_S", "ENRICH_TIME_LIMIT_S"),
    "catalog_app.tasks.reembed_workspace": ("ENRICH_SOFT_TIME_LIMIT_S", "ENRICH_TIME_LIMIT_S"),
    "catalog_app.tasks.compact_lexical_index": ("LEXICAL_COMPACT_SOFT_TIME_LIMIT_S", "LEXICAL_COMPACT_TIME_LIMIT_S"),
    "catalog_app.tasks.touch_records": ("MAINTENANCE_SOFT_TIME_LIMIT_S", "MAINTENANCE_TIME_LIMIT_S"),
    "catalog_app.tasks.recover_pending_records": ("MAINTENANCE_SOFT_TIME_LIMIT_S", "MAINTENANCE_TIME_LIMIT_S"),
    "catalog_app.tasks.record_dead_letter": ("MAINTENANCE_SOFT_TIME_LIMIT_S", "MAINTENANCE_TIME_LIMIT_S"),
}

PUBLISHED_AT_HEADER = "memseek_published_at"


def task_time_limits(name: str) -> tuple[float, float] | None:
    """The (soft, hard) time limits of task ``name`` from its settings, or None for a task
    without limits of its own. Raises ``ImproperlyConfigured`` unless 0 < soft <= hard: the
    prefork pool schedules a task's hard limit only once its soft limit has passed, so a soft
    limit above the hard one delays the kill to the soft limit, and a soft limit of 0 falls back
    to the worker's, the largest of all tasks'."""
    names = TIME_LIMIT_SETTINGS.get(name)
    if names is None:
        return None
    from .conf import memseek_setting

    soft, hard = memseek_setting(names[0]), memseek_setting(names[1])
    if not 0 < soft <= hard:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(f"{names[0]} must be more than 0 and at most {names[1]} ({hard}), not {soft}")
    return soft, hard


def time_limits_check() -> None:
    """Read every task's time limits (``task_time_limits``), so a process with a bad pair stops
    at start (``catalog_app``'s ready) with ``ImproperlyConfigured`` naming the setting."""
    for name in TIME_LIMIT_SETTINGS:
        task_time_limits(name)


class TaskTimeLimits:
    """A Celery task annotation (``task_annotations``): each task of ``TIME_LIMIT_SETTINGS``
    gets ``soft_time_limit`` and ``time_limit`` from its settings (``task_time_limits``), read
    when the app finalises its tasks (a worker reads them as it starts)."""

    def annotate(self, task):
        limits = task_time_limits(task.name)
        if limits is None:
            return None
        return {"soft_time_limit": limits[0], "time_limit": limits[1]}


@worker_init.connect(dispatch_uid="memseek_site.queues.enable_pool_time_limits")
def enable_pool_time_limits(sender=None, **kwargs):
    """A prefork pool enforces a task's own limits only when the worker has limits of its own
    (billiard starts its time-out handler only then), so a worker started without
    ``--time-limit``/``--soft-time-limit`` gets the largest of the task limits as its defaults.
    ``worker_init`` comes after the worker read its defaults and before it builds its pool, so a
    worker with invalid limits stops here, at start, naming the setting."""
    limits = [task_time_limits(name) for name in TIME_LIMIT_SETTINGS]
    if getattr(sender, "time_limit", None) is None:
        sender.time_limit = max(hard for _, hard in limits)
    if getattr(sender, "soft_time_limit", None) is None:
        sender.soft_time_limit = max(soft for soft, _ in limits)


@before_task_publish.connect(dispatch_uid="memseek_site.queues.stamp_publication_time")
def stamp_publication_time(sender=None, headers=None, **kwargs):
    """Stamp the message's publication time (Unix seconds) unless a retry's copy already has
    one: a retried task keeps the age of its first publication, so a queue that keeps retrying
    the same work still ages."""
    if headers is not None and PUBLISHED_AT_HEADER not in headers:
        headers[PUBLISHED_AT_HEADER] = time.time()


@dataclass(frozen=True)
class QueueDepth:
    """One queue as the broker holds it: ``depth`` messages waiting, the oldest published
    ``oldest_age_s`` seconds ago (None when the queue is empty or its oldest message has no
    publication time)."""

    queue: str
    depth: int
    oldest_age_s: float | None


class BrokerUnavailable(Exception):
    """The broker did not answer (``detail`` says why)."""

    def __init__(self, detail: str):
        super().__init__(detail)
        self.detail = detail


_clients: dict = {}


def queue_depths(broker_url: str, *, timeout_s: float = 1.0, now: float | None = None) -> list[QueueDepth]:
    """The depth and oldest message's age of each of ``QUEUES`` on the Redis broker at
    ``broker_url``, in one round trip (kombu keeps a queue as a Redis list of JSON messages,
    pushed on the left and popped from the right, so the oldest is the last element). Messages
    delivered to a worker but not acknowledged are not counted. Raises ``BrokerUnavailable``
    when Redis does not answer within ``timeout_s``, and ``ValueError`` for a broker that is not
    Redis."""
    if not broker_url.startswith(("redis://", "rediss://", "redis+socket://")):
        raise ValueError(f"queue depths need a Redis broker, not {broker_url.split(':', 1)[0]}")
    import redis

    client = _clients.get(broker_url)
    if client is None:
        client = _clients.setdefault(broker_url, redis.Redis.from_url(
            broker_url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s))
    pipeline = client.pipeline(transaction=False)
    for queue in QUEUES:
        pipeline.llen(queue)
        pipeline.lindex(queue, -1)
    try:
        answers = pipeline.execute()
    except redis.RedisError as error:
        raise BrokerUnavailable(f"{type(error).__name__}: {error}") from error
    now = time.time() if now is None else now
    return [QueueDepth(queue, answers[2 * n], _age(answers[2 * n + 1], now)) for n, queue in enumerate(QUEUES)]


def _age(raw: bytes | None, now: float) -> float | None:
    if raw is None:
        return None
    try:
        published = json.loads(raw)["headers"][PUBLISHED_AT_HEADER]
    except (ValueError, KeyError, TypeError):  # a message some other client published: age unknown
        return None
    return max(0.0, now - float(published))
