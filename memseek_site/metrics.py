"""The service's Prometheus instruments and the one scrape (``GET /metrics``, docs/metrics.md).

Counters and histograms are process-wide ``prometheus_client`` instruments. Under gunicorn's
several workers the operator sets ``PROMETHEUS_MULTIPROC_DIR`` (an empty directory, before the
processes start): every process then writes its samples to files there and a scrape, in any
worker, sums them all (``prometheus_client.multiprocess``). Without it a scrape sees the process
that answers it (``runserver``, the test client).

Gauges that describe shared state (backlogs, slots in use, queue depths) are not kept by any
process: a *gauge source* is a callback the scrape calls, so the value is read once, fresh, by
the process that answers, and multiprocess mode needs no gauge files. An app registers its
sources with ``gauge_source`` in its ``AppConfig.ready()``, since this module (the lowest floor)
imports no app. A source that fails is left out of that scrape and counted in
``memseek_metrics_source_errors_total``; the scrape itself never fails because of one.

A *request observer* is told of every answered request (route pattern, method, status,
seconds) by the same middleware that times it for Prometheus, so the console's per-route
figures are the same measurement, not a second timing system; apps register theirs with
``request_observer``. An observer that raises is logged and the request still answers.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Histogram, multiprocess
from prometheus_client.core import REGISTRY, GaugeMetricFamily
from prometheus_client.exposition import choose_encoder


logger = logging.getLogger(__name__)

ROUTE_UNMATCHED = "unmatched"

HTTP_REQUESTS = Counter("memseek_http_requests_total", "HTTP requests answered, by route pattern, method and status.",
                        ["route", "method", "status"])
HTTP_DURATION = Histogram("memseek_http_request_duration_seconds",
                          "Time from the request reaching Django to its response, by route pattern, method and status.",
                          ["route", "method", "status"],
                          buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
HTTP_DB_DURATION = Histogram("memseek_http_request_db_seconds",
                             "Time a request spent in database statements issued on its own thread, by route pattern.",
                             ["route"], buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
HTTP_DB_STATEMENTS = Histogram("memseek_http_request_db_statements",
                               "Database statements a request issued on its own thread, by route pattern.",
                               ["route"], buckets=(1, 2, 5, 10, 20, 50, 100, 200, 500))
MODEL_CALLS = Counter("memseek_model_calls_total",
                      "Calls to a model: kind (chat, embedding), provider name (local for the bundled model) and "
                      "outcome (ok, or the error code the call raised).", ["kind", "provider", "outcome"])
SOURCE_ERRORS = Counter("memseek_metrics_source_errors_total", "Gauge sources that raised during a scrape.", ["gauge"])


@contextmanager
def model_call_counted(kind: str, provider: str) -> Iterator[None]:
    """Count the model call of ``kind`` to ``provider`` made inside: outcome ``ok``, else the
    raised error's ``code`` (``error`` for an exception without one). Re-raises."""
    try:
        yield
    except BaseException as error:
        MODEL_CALLS.labels(kind, provider, getattr(error, "code", None) or "error").inc()
        raise
    MODEL_CALLS.labels(kind, provider, "ok").inc()


RequestObserver = Callable[[str, str, int, float], None]
_REQUEST_OBSERVERS: list[RequestObserver] = []


def request_observer(observe: RequestObserver) -> RequestObserver:
    """Decorator: call ``observe(route, method, status, seconds)`` after every answered request."""
    if observe not in _REQUEST_OBSERVERS:
        _REQUEST_OBSERVERS.append(observe)
    return observe


def request_observed(route: str, method: str, status: int, seconds: float) -> None:
    """Tell every request observer of one answered request; one that raises is logged, skipped."""
    for observe in list(_REQUEST_OBSERVERS):
        try:
            observe(route, method, status, seconds)
        except Exception:  # the request was answered; its bookkeeping must not fail it
            logger.exception("request observer %s failed", getattr(observe, "__qualname__", observe))


@dataclass(frozen=True, slots=True)
class GaugeSource:
    """A gauge read at scrape time: ``read()`` returns ``{label values tuple: value}``."""

    name: str
    documentation: str
    labels: tuple[str, ...]
    read: Callable[[], Mapping[tuple[str, ...], float]]


_SOURCES: dict[str, GaugeSource] = {}


def gauge_source(name: str, documentation: str, labels: Iterable[str] = ()):
    """Decorator: register the decorated function as the gauge ``name``'s source (replacing any
    earlier one of that name, so an app can point a declared gauge at its own reader)."""
    def register(read: Callable[[], Mapping[tuple[str, ...], float]]):
        _SOURCES[name] = GaugeSource(name, documentation, tuple(labels), read)
        return read
    return register


class _GaugeSources:
    """The registered gauge sources as one collector, read on every scrape."""

    def collect(self):
        for source in list(_SOURCES.values()):
            try:
                values = source.read()
            except Exception:  # one broken source must not take the whole scrape down
                logger.exception("gauge source %s failed", source.name)
                SOURCE_ERRORS.labels(source.name).inc()
                continue
            family = GaugeMetricFamily(source.name, source.documentation, labels=source.labels)
            for label_values, value in values.items():
                family.add_metric(list(label_values), value)
            yield family


def scrape(accept: str = "") -> tuple[bytes, str]:
    """The exposition of every instrument (summed over all processes when
    ``PROMETHEUS_MULTIPROC_DIR`` is set) and of every gauge source, read now, with its content
    type: OpenMetrics when the ``accept`` header asks for it, else the Prometheus text format."""
    registry = CollectorRegistry()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        multiprocess.MultiProcessCollector(registry)
    else:
        registry.register(_ThisProcess())
    registry.register(_GaugeSources())
    encoder, content_type = choose_encoder(accept)
    return encoder(registry), content_type


class _ThisProcess:
    """The default registry (this process's instruments and the client's process and platform
    collectors) seen through a scrape's own registry, which also holds the gauge sources."""

    def collect(self):
        yield from REGISTRY.collect()
