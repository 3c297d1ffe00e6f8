"""The pipeline's ``Trace`` hook as OpenTelemetry spans: each stage a span named as the stage
(``engine.trace.SEARCH_STAGES``, ``RETRIEVE_STAGES``), so a trace shows the same stages the
benchmarks time, from the one hook, with no second timing system.

A stage on the request's thread nests under whatever span is current there (the memory
operation's, an enclosing stage's). A stage on a pool thread (``memseek_site.parallel``: backend
channels, retrieval legs) has no current span of its own, so it is made a child of the span that
was current when the trace was created, and stays in the request's trace.
"""
from __future__ import annotations

from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace

from memseek_site.tracing import active_tracer

from .engine.trace import NO_TRACE, Trace

STAGE = "memseek.stage"
SOURCE = "memseek.source"
PRODUCED = "memseek.produced"


class SpanTrace(Trace):
    """Opens one span per stage on ``tracer``; records what a stage produced as a count."""

    def __init__(self, tracer):
        self._tracer = tracer
        self._parent = otel_context.get_current()

    def stage(self, name: str, source: Any = None):
        own = otel_trace.get_current_span().get_span_context().is_valid
        attributes = {STAGE: name}
        if source is not None:
            attributes[SOURCE] = _source_name(source)
        return self._tracer.start_as_current_span(name, context=None if own else self._parent, attributes=attributes)

    def produced(self, name: str, items, source: Any = None) -> None:
        otel_trace.get_current_span().add_event(PRODUCED, {STAGE: name, "count": len(items)})


def request_trace() -> Trace:
    """A ``SpanTrace`` under the current span while tracing is on, else ``NO_TRACE``."""
    tracer = active_tracer()
    return NO_TRACE if tracer is None else SpanTrace(tracer)


def _source_name(source) -> str:
    spec = getattr(source, "source", None)
    return str(getattr(spec, "name", None) or getattr(spec, "mode", None) or type(source).__name__)
