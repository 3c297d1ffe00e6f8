"""Per-request measurements and the ``GET /metrics`` route (docs/metrics.md).

``RequestMetricsMiddleware`` times every request and the database statements issued on its
thread, labelled by the route *pattern* Django resolved (``/views/<str:name>/query``, never the
raw path, so the label set stays bounded) or ``unmatched``, and by method (any method outside
``KNOWN_METHODS`` is ``other``). The route is off unless
``METRICS_ENABLED``; when on it answers only ``Authorization: Bearer <METRICS_KEY>``, so it is
never open on the API port without a key (an empty ``METRICS_KEY`` refuses every scrape).
"""
from __future__ import annotations

import hmac
import time

from django.db import connection
from django.http import HttpResponse, JsonResponse

from .conf import memseek_setting
from .errors import ApiError
from .metrics import (HTTP_DB_DURATION, HTTP_DB_STATEMENTS, HTTP_DURATION, HTTP_REQUESTS, ROUTE_UNMATCHED,
                      request_observed, scrape)


# A client may send any method token; only these become label values, so no caller can grow
# the number of series.
KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
OTHER_METHOD = "other"


class _StatementTimer:
    """A ``connection.execute_wrapper`` summing the time and number of statements it wraps."""

    __slots__ = ("seconds", "statements")

    def __init__(self):
        self.seconds = 0.0
        self.statements = 0

    def __call__(self, execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.seconds += time.perf_counter() - started
            self.statements += 1


class RequestMetricsMiddleware:
    """Counts and times each request by route pattern, method and status, with its database time."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        timer = _StatementTimer()
        started = time.perf_counter()
        with connection.execute_wrapper(timer):
            response = self.get_response(request)
        elapsed = time.perf_counter() - started
        match = getattr(request, "resolver_match", None)
        route = f"/{match.route}" if match is not None else ROUTE_UNMATCHED
        method = request.method if request.method in KNOWN_METHODS else OTHER_METHOD
        labels = (route, method, str(response.status_code))
        HTTP_REQUESTS.labels(*labels).inc()
        HTTP_DURATION.labels(*labels).observe(elapsed)
        HTTP_DB_DURATION.labels(route).observe(timer.seconds)
        HTTP_DB_STATEMENTS.labels(route).observe(timer.statements)
        # After the statement timer: an observer's own statements are not the request's.
        request_observed(route, method, response.status_code, elapsed)
        return response


def metrics_view(request):
    """``GET /metrics``: the Prometheus text exposition. 404 ``not_found`` while
    ``METRICS_ENABLED`` is off (as if there were no route); 401 ``unauthorized`` without the
    bearer ``METRICS_KEY``."""
    if not memseek_setting("METRICS_ENABLED"):
        return _refused(ApiError("not_found", f"No route {request.path}; the routes are listed at /api/schema/."))
    if request.method != "GET":
        response = _refused(ApiError("method_not_allowed", f"{request.method} /metrics is not served; use GET."))
        response["Allow"] = "GET"
        return response
    key = memseek_setting("METRICS_KEY")
    presented = request.headers.get("Authorization", "")
    if not key or not hmac.compare_digest(presented.encode(), f"Bearer {key}".encode()):
        return _refused(ApiError("unauthorized", "GET /metrics needs the header Authorization: Bearer <METRICS_KEY> "
                                                 "(the metrics key, not a workspace key)."))
    body, content_type = scrape(request.headers.get("Accept", ""))
    return HttpResponse(body, content_type=content_type)


def _refused(error: ApiError) -> JsonResponse:
    return JsonResponse(error.envelope(), status=error.status)
