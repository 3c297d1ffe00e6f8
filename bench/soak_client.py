"""The soak's HTTP client and its tally: every response counted by phase, status and error code,
every 5xx kept with the request that caused it.

Requests go over ``http.client`` on a new loopback connection each (gunicorn's sync workers close
every connection), with headers exactly as given, so a case may send a bad ``Host`` or an
over-long request target.
"""
from __future__ import annotations

import http.client
import json
import threading
import time
from collections import Counter
from dataclasses import dataclass

# A response at or above this is a server error, the soak's failure unless the database was down.
SERVER_ERROR = 500
# Codes of error answers that are not the JSON envelope (nor a JSON-RPC error).
NOT_ENVELOPE = ("(not json)", "(no envelope)")


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    headers: dict
    body: bytes
    started: float  # time.monotonic() when the request was sent
    finished: float

    def json(self):
        return json.loads(self.body)

    def code(self) -> str:
        """The envelope's ``error`` code; ``-`` for a success body, ``(not json)`` for a body that
        is no JSON (an HTML error page), ``jsonrpc <code>`` for a JSON-RPC error."""
        try:
            payload = json.loads(self.body) if self.body else None
        except ValueError:
            return "(not json)" if self.status >= 400 else "-"
        if isinstance(payload, dict):
            if isinstance(payload.get("error"), str):
                return payload["error"]
            if isinstance(payload.get("error"), dict):
                return f"jsonrpc {payload['error'].get('code')}"
        return "-" if self.status < 400 else "(no envelope)"


def send(port: int, method: str, path: str, body: bytes | None = None, headers=(), *, key: str | None = None,
         timeout: float = 120) -> Answer:
    """One request to 127.0.0.1:``port``; ``headers`` as pairs (a ``Host`` or ``Content-Length``
    pair replaces the one this would send). Raises ``OSError`` when no answer comes (connection refused or reset)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    names = {name.lower() for name, _ in headers}
    started = time.monotonic()
    try:
        conn.putrequest(method, path, skip_host="host" in names, skip_accept_encoding=True)
        for name, value in headers:
            conn.putheader(name, value)
        if key is not None and "authorization" not in names:
            conn.putheader("Authorization", f"Bearer {key}")
        if body is not None and "content-length" not in names:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        response = conn.getresponse()
        return Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read(), started,
                      time.monotonic())
    finally:
        conn.close()


class Tally:
    """Thread-safe counts of ``(phase, status, code)``, the server errors with their inputs, and
    the requests that got no answer at all."""

    def __init__(self):
        self.counts: Counter = Counter()
        self.server_errors: list[dict] = []
        self.no_answer: list[dict] = []
        self.not_envelope: list[dict] = []  # 4xx answers that are no JSON error (the first 100)
        self.route_seconds: Counter = Counter()  # (phase, route) -> seconds spent waiting for answers
        self.route_requests: Counter = Counter()
        self._lock = threading.Lock()

    def add(self, phase: str, answer: Answer, request: dict, *, excused: bool = False) -> None:
        """Count ``answer`` to ``request`` (a description: route, path, body, ...); a 5xx is kept
        with its input unless ``excused`` (a 503 of the database-down window)."""
        with self._lock:
            self.route_seconds[(phase, request.get("route", ""))] += answer.finished - answer.started
            self.route_requests[(phase, request.get("route", ""))] += 1
        self.add_outcome(phase, answer.status, answer.code(), request, answer.body[:500].decode("utf-8", "replace"),
                         excused=excused)

    def add_outcome(self, phase: str, status: int, code: str, request: dict, response: str, *,
                    excused: bool = False) -> None:
        with self._lock:
            self.counts[(phase, status, code, excused)] += 1
            if status >= SERVER_ERROR and not excused:
                self.server_errors.append({"phase": phase, "status": status, "code": code, "response": response,
                                           **request})
            elif status >= 400 and code in NOT_ENVELOPE and len(self.not_envelope) < 100:
                self.not_envelope.append({"phase": phase, "status": status, "code": code, "response": response,
                                          **request})

    def lost(self, phase: str, request: dict, error: Exception) -> None:
        with self._lock:
            self.counts[(phase, 0, type(error).__name__, False)] += 1
            self.no_answer.append({"phase": phase, "error": repr(error), **request})

    def rows(self) -> list[dict]:
        return [{"phase": phase, "status": status, "code": code, "excused": excused, "count": count}
                for (phase, status, code, excused), count in sorted(self.counts.items(), key=lambda item: item[0][:3])]

    def route_rows(self) -> list[dict]:
        return [{"phase": phase, "route": route, "requests": self.route_requests[(phase, route)],
                 "mean_ms": round(1000 * seconds / self.route_requests[(phase, route)], 1)}
                for (phase, route), seconds in sorted(self.route_seconds.items())]

    def total(self, phase: str | None = None) -> int:
        return sum(count for (name, *_), count in self.counts.items() if phase in (None, name))
