"""The Operations page's figures over the hour ending with the current minute (UTC): requests
and latency per route (from ``RequestMinute``), ingest-to-ready lag and records per collection
(from the records, through the block range index on ``created_at``). Reads only."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection

from ..models import Record, Workspace
from .latency import BUCKETS, add_counts, percentile_bound_ms
from .models import RequestMinute
from .request_minutes import minute_of

WINDOW_MINUTES = 60
RECORD, WORKSPACE, REQUEST_MINUTE = Record._meta.db_table, Workspace._meta.db_table, RequestMinute._meta.db_table


def hour_minutes(now: datetime) -> tuple[datetime, ...]:
    """The ``WINDOW_MINUTES`` minutes ending with ``now``'s, oldest first."""
    last = minute_of(now)
    return tuple(last - timedelta(minutes=back) for back in range(WINDOW_MINUTES - 1, -1, -1))


@dataclass(frozen=True, slots=True)
class RouteHour:
    """One route and method over the hour: totals, percentile bounds (ms) and per-minute series."""

    route: str
    method: str
    requests: int
    client_errors: int
    server_errors: int
    p50_ms: float | None
    p95_ms: float | None
    requests_per_minute: tuple[int, ...]
    p95_ms_per_minute: tuple[float | None, ...]

    @property
    def label(self) -> str:
        return f"{self.method} {self.route}"


def route_hours(*, now: datetime) -> list[RouteHour]:
    """Every route and method answered in the hour, busiest first (then by label)."""
    minutes = hour_minutes(now)
    position = {minute: index for index, minute in enumerate(minutes)}
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT minute, route, method, requests, client_errors, server_errors, buckets "
                       f"FROM {REQUEST_MINUTE} WHERE minute >= %s AND minute <= %s", [minutes[0], minutes[-1]])
        rows = cursor.fetchall()
    grouped: dict[tuple[str, str], list] = {}
    for minute, route, method, requests, client_errors, server_errors, buckets in rows:
        grouped.setdefault((route, method), []).append((position[minute_of(minute)], requests, client_errors,
                                                        server_errors, buckets))
    found = []
    for (route, method), entries in grouped.items():
        per_minute = [0] * WINDOW_MINUTES
        p95s: list[float | None] = [None] * WINDOW_MINUTES
        hour = [0] * BUCKETS
        for index, requests, _, _, buckets in entries:
            per_minute[index] = requests
            p95s[index] = percentile_bound_ms(buckets, 0.95)
            hour = add_counts(hour, buckets)
        found.append(RouteHour(route, method, sum(e[1] for e in entries), sum(e[2] for e in entries),
                               sum(e[3] for e in entries), percentile_bound_ms(hour, 0.5),
                               percentile_bound_ms(hour, 0.95), tuple(per_minute), tuple(p95s)))
    return sorted(found, key=lambda r: (-r.requests, r.label))


@dataclass(frozen=True, slots=True)
class LagMinute:
    """Records written in one minute: how many, how many are ready, and the 50th and 95th
    percentiles (continuous, as PostgreSQL's ``percentile_cont``) of their seconds from written
    to ready; ``None`` while none is ready."""

    minute: datetime
    written: int
    ready: int
    p50_s: float | None
    p95_s: float | None


_LAG = (f"SELECT date_trunc('minute', created_at), count(*), count(enriched_at), "
        "percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM enriched_at - created_at)), "
        "percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM enriched_at - created_at)) "
        f"FROM {RECORD} WHERE created_at >= %s AND created_at < %s GROUP BY 1")


def ingest_lag(*, now: datetime) -> tuple[LagMinute, ...]:
    """One ``LagMinute`` per minute of the hour (zeros where nothing was written)."""
    minutes = hour_minutes(now)
    with connection.cursor() as cursor:
        cursor.execute(_LAG, [minutes[0], minutes[-1] + timedelta(minutes=1)])
        by_minute = {minute_of(row[0]): row[1:] for row in cursor.fetchall()}
    return tuple(LagMinute(minute, *_lag_values(by_minute.get(minute))) for minute in minutes)


def _lag_values(row) -> tuple[int, int, float | None, float | None]:
    if row is None:
        return 0, 0, None, None
    written, ready, p50, p95 = row
    return written, ready, None if p50 is None else float(p50), None if p95 is None else float(p95)


@dataclass(frozen=True, slots=True)
class CollectionSeries:
    """Rows stored now in one workspace's collection, as they stood at the end of each minute
    of the hour (counted by when they were written: an erased row is gone from every minute)."""

    label: str
    totals: tuple[int, ...]


_TOTALS = (f"SELECT w.name, r.collection, count(*) FROM {RECORD} r JOIN {WORKSPACE} w ON w.id = r.workspace_id "
           "GROUP BY 1, 2")
_RECENT = (f"SELECT w.name, r.collection, date_trunc('minute', r.created_at), count(*) FROM {RECORD} r "
           f"JOIN {WORKSPACE} w ON w.id = r.workspace_id WHERE r.created_at >= %s GROUP BY 1, 2, 3")


def records_per_collection(*, now: datetime, top: int = 6) -> list[CollectionSeries]:
    """The ``top`` largest collections (``workspace/collection``) by rows stored now, largest
    first, then one ``other (N collections)`` series summing the rest, if any."""
    minutes = hour_minutes(now)
    ends = [minute + timedelta(minutes=1) for minute in minutes]
    with connection.cursor() as cursor:
        cursor.execute(_TOTALS)
        totals = {(ws, coll): count for ws, coll, count in cursor.fetchall()}
        cursor.execute(_RECENT, [minutes[0]])
        recent = cursor.fetchall()
    later: dict[tuple[str, str], list[int]] = {key: [0] * WINDOW_MINUTES for key in totals}
    for ws, coll, minute, count in recent:
        for index, end in enumerate(ends):
            if minute >= end:  # written after that minute ended
                later[(ws, coll)][index] += count
    series = {key: [totals[key] - after for after in later[key]] for key in totals}
    ranked = sorted(series, key=lambda key: (-totals[key], key))
    found = [CollectionSeries(f"{ws}/{coll}", tuple(series[(ws, coll)])) for ws, coll in ranked[:top]]
    rest = ranked[top:]
    if rest:
        summed = [sum(series[key][index] for key in rest) for index in range(WINDOW_MINUTES)]
        found.append(CollectionSeries(f"other ({len(rest)} collections)", tuple(summed)))
    return found
