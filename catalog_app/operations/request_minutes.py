"""Requests per route and minute, summed across every process and host, for the Operations page.

Prometheus counters live in each process (or each host's multiprocess directory), and the
console is answered by one process of one host, so it cannot read them. Instead every process
adds what it answered to a small ``RequestMinute`` table in the shared database: the request
middleware's observer (``memseek_site.metrics.request_observer``) adds each request to this
process's ``RequestMinuteBuffer``, keyed by the minute it was answered in, and the first
request after ``OPERATIONS_FLUSH_S`` seconds writes the buffer with one upsert that *adds* to
the row each key already has. Sums are exact whatever the number of gunicorn workers or hosts
(each request is counted by exactly one process, and the upsert adds under the row's lock);
rows are written in key order, so two processes flushing together never deadlock. What a
process has not flushed yet (at most ``OPERATIONS_FLUSH_S`` seconds of its requests, or its
last ones until its next request) is not on the page; a process killed loses that much. The
middleware never writes inside a transaction that is open around the request (the counts wait).
A flush that fails is logged and dropped: the request it rode on still answers.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from django.db import connection, transaction

from memseek_site.conf import memseek_setting
from memseek_site.metrics import request_observer

from .latency import BUCKETS, bucket_of
from .models import RequestMinute

logger = logging.getLogger(__name__)

TABLE = RequestMinute._meta.db_table
# Rows are kept a little longer than the page's hour, so a slow flush still lands in a kept row.
KEEP = timedelta(hours=2)


@dataclass(slots=True)
class MinuteCounts:
    requests: int = 0
    client_errors: int = 0
    server_errors: int = 0
    buckets: list[int] = field(default_factory=lambda: [0] * BUCKETS)

    def add(self, status: int, seconds: float) -> None:
        self.requests += 1
        self.client_errors += 400 <= status < 500
        self.server_errors += status >= 500
        self.buckets[bucket_of(seconds)] += 1


Key = tuple[datetime, str, str]  # (minute, route, method)


def minute_of(moment: datetime) -> datetime:
    """``moment`` truncated to its minute, in UTC."""
    return moment.astimezone(timezone.utc).replace(second=0, microsecond=0)


class RequestMinuteBuffer:
    """One process's requests not yet written, by minute, route and method (thread-safe)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._counts: dict[Key, MinuteCounts] = {}
        self._last_flush = time.monotonic()

    def add(self, *, at: datetime, route: str, method: str, status: int, seconds: float) -> None:
        with self._lock:
            self._counts.setdefault((minute_of(at), route, method), MinuteCounts()).add(status, seconds)

    def take_if_due(self, interval_s: float) -> dict[Key, MinuteCounts]:
        """The buffered counts, emptied, when ``interval_s`` seconds passed since the last take
        (or ``interval_s`` is 0); else nothing."""
        with self._lock:
            now = time.monotonic()
            if not self._counts or (interval_s > 0 and now - self._last_flush < interval_s):
                return {}
            taken, self._counts, self._last_flush = self._counts, {}, now
            return taken


_UPSERT = (f"INSERT INTO {TABLE} AS t (minute, route, method, requests, client_errors, server_errors, buckets) "
           "VALUES {rows} ON CONFLICT (minute, route, method) DO UPDATE SET "
           "requests = t.requests + EXCLUDED.requests, "
           "client_errors = t.client_errors + EXCLUDED.client_errors, "
           "server_errors = t.server_errors + EXCLUDED.server_errors, "
           "buckets = ARRAY(SELECT a + b FROM unnest(t.buckets, EXCLUDED.buckets) WITH ORDINALITY AS u(a, b, i) "
           "ORDER BY i)")
_PRUNE = f"DELETE FROM {TABLE} WHERE minute < %s"


def request_minutes_write(counts: dict[Key, MinuteCounts], *, now: datetime | None = None) -> None:
    """Add ``counts`` to the table (one statement, rows in key order) and delete rows older than
    ``KEEP``. Raises what the database raises."""
    if not counts:
        return
    keys = sorted(counts)
    params: list = []
    for key in keys:
        value = counts[key]
        params += [*key, value.requests, value.client_errors, value.server_errors, value.buckets]
    rows = ", ".join(["(%s, %s, %s, %s, %s, %s, %s::bigint[])"] * len(keys))
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(_UPSERT.replace("{rows}", rows), params)
        cursor.execute(_PRUNE, [(now or datetime.now(timezone.utc)) - KEEP])


BUFFER = RequestMinuteBuffer()


@request_observer
def request_counted(route: str, method: str, status: int, seconds: float) -> None:
    """The middleware's observer: buffer the request; write the buffer when it is due."""
    BUFFER.add(at=datetime.now(timezone.utc), route=route, method=method, status=status, seconds=seconds)
    if connection.in_atomic_block:
        # Whoever serves requests inside their own transaction (a test, a caller wrapping the
        # handler) decides its fate; counts written there would live or die with it. They wait
        # for a request answered outside one.
        return
    taken = BUFFER.take_if_due(memseek_setting("OPERATIONS_FLUSH_S"))
    if taken:
        try:
            request_minutes_write(taken)
        except Exception:  # logged and dropped: counting must never fail the request it rides on
            logger.exception("writing %d request minutes failed; they are dropped", len(taken))
