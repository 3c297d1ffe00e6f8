"""A tiny OTLP/HTTP trace receiver on loopback for tests: the processes under test (gunicorn, a
Celery worker) export their spans to it with the real OTLP exporter
(``OTEL_EXPORTER_OTLP_ENDPOINT``), and it keeps them in memory, parsed from the protobuf with
``opentelemetry-proto``'s own messages."""
from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

SERVER, PRODUCER, CONSUMER = 2, 4, 5  # opentelemetry.proto.trace.v1.Span.SpanKind


@dataclass(frozen=True)
class ReceivedSpan:
    service: str
    name: str
    kind: int
    trace_id: str
    span_id: str
    parent_span_id: str  # "" for a root span
    attributes: dict


def _value(any_value):
    field = any_value.WhichOneof("value")
    return None if field is None else getattr(any_value, field)


def _attributes(pairs) -> dict:
    return {pair.key: _value(pair.value) for pair in pairs}


class OTLPReceiver:
    """``with OTLPReceiver() as receiver``: ``receiver.endpoint`` for ``OTEL_EXPORTER_OTLP_ENDPOINT``,
    ``receiver.spans()`` what arrived so far."""

    def __init__(self):
        self._spans: list[ReceivedSpan] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != "/v1/traces":
                    self.send_error(404)
                    return
                receiver._add(ExportTraceServiceRequest.FromString(body))
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _add(self, request) -> None:
        received = []
        for resource_spans in request.resource_spans:
            service = _attributes(resource_spans.resource.attributes).get("service.name", "")
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    received.append(ReceivedSpan(service, span.name, span.kind, span.trace_id.hex(), span.span_id.hex(),
                                                 span.parent_span_id.hex(), _attributes(span.attributes)))
        with self._lock:
            self._spans.extend(received)

    def spans(self) -> list[ReceivedSpan]:
        with self._lock:
            return list(self._spans)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()
