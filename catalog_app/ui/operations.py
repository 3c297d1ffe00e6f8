"""The console's Operations page (docs/console.md#operations): requests and p50/p95 per route
over the last hour, queue depths and backlogs now, ingest-to-ready lag and records per
collection over the hour. Staff only, read only, service-wide (not one workspace's)."""
from __future__ import annotations

from django.contrib.admin.views.decorators import staff_member_required
from django.shortcuts import render
from django.utils import timezone
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from ..health import health_checks
from ..operations.latency import format_ms
from ..operations.request_minutes import BUFFER, request_minutes_write
from ..operations.selectors import hour_minutes, ingest_lag, records_per_collection, route_hours
from ..operations.svg import Series, bar_chart, line_chart

PLOTTED_ROUTES = 6


@staff_member_required
@require_GET
def operations(request):
    # This process's own unwritten requests first, so the page is current for what it served.
    request_minutes_write(BUFFER.take_if_due(0))
    now = timezone.now()
    minutes = hour_minutes(now)
    routes = route_hours(now=now)
    plotted = routes[:PLOTTED_ROUTES]
    lag = ingest_lag(now=now)
    collections = records_per_collection(now=now)
    queues, backlog, degraded = health_checks()
    queue_rows = [(name, figures) for name, figures in queues.items() if isinstance(figures, dict)]
    charts = {
        "requests": line_chart(name="chart-requests", minutes=minutes, unit="/min",
                               series=[Series(r.label, r.requests_per_minute) for r in plotted]),
        "p95": line_chart(name="chart-p95", minutes=minutes, unit=" ms",
                          series=[Series(r.label, r.p95_ms_per_minute) for r in plotted]),
        "lag": line_chart(name="chart-lag", minutes=minutes, unit=" s",
                          series=[Series("p50", tuple(m.p50_s for m in lag)),
                                  Series("p95", tuple(m.p95_s for m in lag))]),
        "records": line_chart(name="chart-records", minutes=minutes, unit="",
                              series=[Series(s.label, s.totals) for s in collections]),
        "queues": bar_chart(name="chart-queues", unit="",
                            bars=[(name, figures["depth"]) for name, figures in queue_rows]),
    }
    return render(request, "console/operations.html", {
        "tab": "operations", "now": now, "since": minutes[0],
        "charts": {key: mark_safe(svg) for key, svg in charts.items()},  # noqa: S308  every label is escaped in svg
        "routes": [{"route": r, "p50": format_ms(r.p50_ms), "p95": format_ms(r.p95_ms), "colour": index}
                   for index, r in enumerate(routes)],
        "plotted": len(plotted), "collections": [s.label for s in collections],
        "queues": queues, "queue_rows": queue_rows, "backlog": backlog, "degraded": degraded,
        "written": sum(m.written for m in lag), "ready": sum(m.ready for m in lag),
    })
