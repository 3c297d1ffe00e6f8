"""Requests per route and minute, written by several processes' buffers into the real table and
read back by ``route_hours``: the sums and percentiles equal those of the raw requests (the
oracle), whatever way the requests were split between processes and flushes."""
import math
from collections import defaultdict
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from hypothesis import HealthCheck, given, settings, strategies as st

from catalog_app.operations.models import RequestMinute
from catalog_app.operations.request_minutes import (
    BUFFER, KEEP, RequestMinuteBuffer, minute_of, request_minutes_write,
)
from catalog_app.operations.selectors import WINDOW_MINUTES, hour_minutes, route_hours
from tests.catalog_app.test_operations_latency import oracle_bound_ms

ROUTES = ["/search", "/records", "/views/<str:name>/query"]
request = st.tuples(st.integers(0, WINDOW_MINUTES - 1), st.sampled_from(ROUTES), st.sampled_from(["GET", "POST"]),
                    st.sampled_from([200, 201, 400, 404, 429, 500, 503]),
                    st.floats(min_value=0, max_value=70, allow_nan=False),
                    st.integers(0, 2), st.booleans())  # (minute, route, method, status, seconds, process, flush after)


def oracle(requests, minutes):
    grouped = defaultdict(list)
    for minute, route, method, status, seconds, _, _ in requests:
        grouped[(route, method)].append((minute, status, seconds))
    found = {}
    for (route, method), rows in grouped.items():
        per_minute = [0] * WINDOW_MINUTES
        by_minute = defaultdict(list)
        for minute, _, seconds in rows:
            per_minute[minute] += 1
            by_minute[minute].append(seconds)
        latencies = [seconds for *_, seconds in rows]
        found[f"{method} {route}"] = {
            "requests": len(rows), "client_errors": sum(400 <= s < 500 for _, s, _ in rows),
            "server_errors": sum(s >= 500 for _, s, _ in rows),
            "p50_ms": oracle_bound_ms(latencies, 0.5), "p95_ms": oracle_bound_ms(latencies, 0.95),
            "requests_per_minute": tuple(per_minute),
            "p95_ms_per_minute": tuple(oracle_bound_ms(by_minute[m], 0.95) if by_minute[m] else None
                                       for m in range(WINDOW_MINUTES)),
        }
    return found


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(request, max_size=60))
def test_the_table_sums_every_process_exactly(db, requests):
    RequestMinute.objects.all().delete()
    now = timezone.now()
    minutes = hour_minutes(now)
    buffers = [RequestMinuteBuffer() for _ in range(3)]
    for minute, route, method, status, seconds, process, flush in requests:
        buffers[process].add(at=minutes[minute] + timedelta(seconds=17), route=route, method=method, status=status,
                             seconds=seconds)
        if flush:
            request_minutes_write(buffers[process].take_if_due(0), now=now)
    for buffer in buffers:
        request_minutes_write(buffer.take_if_due(0), now=now)

    found = {row.label: {name: getattr(row, name) for name in ("requests", "client_errors", "server_errors", "p50_ms",
                                                               "p95_ms", "requests_per_minute", "p95_ms_per_minute")}
             for row in route_hours(now=now)}
    assert found == oracle(requests, minutes)


def test_routes_are_listed_busiest_first(db):
    now = timezone.now()
    buffer = RequestMinuteBuffer()
    for route, times in (("/a", 1), ("/b", 3), ("/c", 3)):
        for _ in range(times):
            buffer.add(at=now, route=route, method="GET", status=200, seconds=0.01)
    request_minutes_write(buffer.take_if_due(0), now=now)
    assert [row.label for row in route_hours(now=now)] == ["GET /b", "GET /c", "GET /a"]


def test_minutes_outside_the_hour_are_not_shown_and_old_ones_are_deleted(db):
    now = timezone.now()
    buffer = RequestMinuteBuffer()
    for ago in (timedelta(minutes=WINDOW_MINUTES), KEEP + timedelta(minutes=1), timedelta(0)):
        buffer.add(at=now - ago, route="/search", method="POST", status=200, seconds=0.01)
    request_minutes_write(buffer.take_if_due(0), now=now)
    assert [(row.label, row.requests) for row in route_hours(now=now)] == [("POST /search", 1)]
    kept = set(RequestMinute.objects.values_list("minute", flat=True))
    assert kept == {minute_of(now), minute_of(now - timedelta(minutes=WINDOW_MINUTES))}


def test_a_buffer_is_taken_only_when_its_interval_passed():
    buffer = RequestMinuteBuffer()
    assert buffer.take_if_due(0) == {}  # nothing buffered
    buffer.add(at=timezone.now(), route="/search", method="POST", status=200, seconds=0.01)
    assert buffer.take_if_due(3600) == {}
    taken = buffer.take_if_due(0)
    assert [(key[1:], counts.requests) for key, counts in taken.items()] == [(("/search", "POST"), 1)]
    assert buffer.take_if_due(0) == {}


def test_requests_through_the_middleware_reach_the_table(transactional_db, api, workspace, settings):
    settings.MEMSEEK = {**getattr(settings, "MEMSEEK", {}), "OPERATIONS_FLUSH_S": 0}
    BUFFER.take_if_due(0)
    RequestMinute.objects.all().delete()
    assert api.get("/health").status_code == 200
    assert api.get("/records/not-a-uuid").status_code == 422
    assert api.get("/no/such/route").status_code == 404
    now = timezone.now()
    rows = {row.label: row for row in route_hours(now=now)}
    assert rows["GET /health"].requests == 1 and rows["GET /health"].client_errors == 0
    assert rows["GET /records/<str:id>"].client_errors == 1
    assert rows["GET unmatched"].requests == 1
    assert math.isfinite(rows["GET /health"].p95_ms)


def test_a_failing_write_is_dropped_and_the_request_still_answers(transactional_db, api, workspace, settings,
                                                                   caplog):
    settings.MEMSEEK = {**getattr(settings, "MEMSEEK", {}), "OPERATIONS_FLUSH_S": 0}
    BUFFER.take_if_due(0)
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE {RequestMinute._meta.db_table} RENAME TO request_minute_gone")
    try:
        assert api.get("/health").status_code == 200
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"ALTER TABLE request_minute_gone RENAME TO {RequestMinute._meta.db_table}")
    assert "request minutes failed" in caplog.text
    assert api.get("/health").status_code == 200
    assert route_hours(now=timezone.now())[0].requests == 1  # only the second request; the first was dropped


def test_inside_a_transaction_around_the_request_the_counts_wait(api, workspace, settings):
    settings.MEMSEEK = {**getattr(settings, "MEMSEEK", {}), "OPERATIONS_FLUSH_S": 0}
    BUFFER.take_if_due(0)
    RequestMinute.objects.all().delete()
    assert connection.in_atomic_block  # the test's own transaction
    with CaptureQueriesContext(connection) as captured:
        assert api.get("/health").status_code == 200
    assert captured.captured_queries and not any(RequestMinute._meta.db_table in query["sql"]
                                                 for query in captured.captured_queries)
    assert RequestMinute.objects.count() == 0
    assert [key[1:] for key in BUFFER.take_if_due(0)] == [("/health", "GET")]


@pytest.mark.parametrize("route", ["/records/<str:id>", "<script>alert(1)</script>"])
def test_route_labels_are_stored_as_given(db, route):
    buffer = RequestMinuteBuffer()
    buffer.add(at=timezone.now(), route=route, method="GET", status=200, seconds=0.2)
    request_minutes_write(buffer.take_if_due(0))
    assert route_hours(now=timezone.now())[0].route == route
