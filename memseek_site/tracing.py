"""OpenTelemetry traces (docs/metrics.md): off unless ``OTEL_EXPORTER_OTLP_ENDPOINT`` or
``OTEL_TRACES_EXPORTER`` is set.

``tracing_configure()`` runs once per process before Django loads its middleware (``wsgi.py``) and
in each Celery worker process (``celery.py``): it installs a tracer provider exporting through
the configured exporter and the Django, Celery and psycopg instrumentations, so one trace runs
from the HTTP request through the search pipeline's stages (``search_app.stage_spans`` bridges
the pipeline's ``Trace`` hook) into the Celery task the request enqueued (the Celery
instrumentation carries the context in the message headers, or runs an eager task inside the
request's span).

Memory operations are spans named by the OpenTelemetry GenAI memory conventions' operation
(``search_memory``, ``update_memory``, ``delete_memory``) with their attributes
(``memory_operation``); the query text is recorded only when
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` is true, as those conventions make it opt-in.
While tracing is off every helper here is a no-op and nothing of the SDK is imported.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

PROVIDER_NAME = "memseek"
MEMORY_OPERATIONS = ("search_memory", "update_memory", "delete_memory")
# Attribute names of the GenAI memory conventions (the registry's gen_ai.memory.* namespace).
OPERATION_NAME = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
STORE_ID = "gen_ai.memory.store.id"
RECORD_COUNT = "gen_ai.memory.record.count"
QUERY_TEXT = "gen_ai.memory.query.text"
ERROR_TYPE = "error.type"

_state: dict = {"provider": None, "instrumentors": ()}


def tracing_requested() -> bool:
    """True when the environment asks for traces: an OTLP endpoint, or an exporter other than ``none``."""
    exporter = os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none":
        return False
    return bool(exporter or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"))


def tracing_configure(exporter=None):
    """Install tracing in this process and return its tracer provider, or None when tracing is
    not requested. ``exporter`` (a span exporter) replaces the environment's and is called
    synchronously, span by span (tests); otherwise ``OTEL_TRACES_EXPORTER`` picks ``otlp`` (the
    default, OTLP over HTTP to ``OTEL_EXPORTER_OTLP_ENDPOINT``) or ``console``, batched.
    Raises ``ValueError`` for another exporter name. Calling it again changes nothing."""
    if _state["provider"] is not None:
        return _state["provider"]
    if exporter is None and not tracing_requested():
        return None
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create(
        {"service.name": os.environ.get("OTEL_SERVICE_NAME", "memseek")}))
    provider.add_span_processor(SimpleSpanProcessor(exporter) if exporter is not None
                                else BatchSpanProcessor(_environment_exporter()))
    instrumentors = (DjangoInstrumentor(), CeleryInstrumentor(), PsycopgInstrumentor())
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=provider)
    _state.update(provider=provider, instrumentors=instrumentors)
    return provider


def tracing_stop() -> None:
    """Remove the instrumentations and flush and drop the provider (tests, process exit)."""
    provider = _state["provider"]
    if provider is None:
        return
    for instrumentor in _state["instrumentors"]:
        instrumentor.uninstrument()
    provider.shutdown()
    _state.update(provider=None, instrumentors=())


def _environment_exporter():
    name = os.environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() or "otlp"
    if name == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    raise ValueError(f"OTEL_TRACES_EXPORTER={name!r} is not supported; use otlp, console or none")


def active_tracer():
    """This process's tracer, or None while tracing is off."""
    provider = _state["provider"]
    return provider.get_tracer("memseek") if provider is not None else None


@contextmanager
def memory_operation(operation: str, *, store_id: str, query: str | None = None) -> Iterator:
    """A span for memory operation ``operation`` (one of ``MEMORY_OPERATIONS``) on store
    ``store_id`` (the workspace), named as the operation, current inside; yields it so the caller
    can set ``RECORD_COUNT``. An error leaving it sets ``error.type`` (the API error code, else
    the exception's class). Yields a span that records nothing while tracing is off."""
    tracer = active_tracer()
    if tracer is None:
        from opentelemetry.trace import INVALID_SPAN

        yield INVALID_SPAN
        return
    attributes = {OPERATION_NAME: operation, PROVIDER: PROVIDER_NAME, STORE_ID: store_id}
    if query is not None and _capture_content():
        attributes[QUERY_TEXT] = query
    with tracer.start_as_current_span(operation, attributes=attributes) as span:
        try:
            yield span
        except Exception as error:
            span.set_attribute(ERROR_TYPE, getattr(error, "code", None) or type(error).__qualname__)
            raise


def _capture_content() -> bool:
    return os.environ.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "").strip().lower() in ("1", "true")
