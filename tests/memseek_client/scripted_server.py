"""A real HTTP server on 127.0.0.1 that answers from a script, for the client's retry, timeout
and error-mapping tests: each request takes the next ``Reply`` (the last one repeats), and every
request is recorded with the monotonic time it arrived."""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: object = field(default_factory=lambda: {"ok": True, "db": True})
    headers: tuple[tuple[str, str], ...] = ()
    delay_s: float = 0.0
    drop: bool = False  # close the connection without answering
    cut_after: int | None = None  # declare the whole body, send this many bytes of it, close


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    headers: dict
    body: bytes
    at: float


class ScriptedServer:
    def __init__(self, *replies: Reply):
        self.replies = list(replies) or [Reply()]
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        self._release = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with outer._lock:
                    outer.seen.append(Seen(self.command, self.path, dict(self.headers), body, time.monotonic()))
                    reply = outer.replies[min(len(outer.seen), len(outer.replies)) - 1]
                if reply.delay_s:
                    outer._release.wait(reply.delay_s)
                if reply.drop:
                    self.close_connection = True
                    return
                payload = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in reply.headers:
                    self.send_header(name, value)
                self.end_headers()
                if reply.cut_after is not None:
                    self.wfile.write(payload[:reply.cut_after])
                    self.close_connection = True
                    return
                self.wfile.write(payload)

            do_GET = do_POST = do_DELETE = _answer

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()


class RecordingSleep:
    """``time.sleep`` that remembers each wait (it still waits)."""

    def __init__(self):
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        time.sleep(seconds)
