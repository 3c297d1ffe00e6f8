"""How the MCP server reaches the REST routes: the one implementation of every tool.

``InProcessRoutes`` (the ``/mcp`` endpoint) hands a request to Django's own request handler in
the calling request's thread: every middleware, the URL resolver and the DRF view run exactly as
for an HTTP client, with the caller's bearer key, on the request's database connection.
``HttpRoutes`` (``manage.py mcp``, stdio) sends the same requests to ``MEMSEEK_URL`` with httpx,
retrying a 503 or a refused connection with backoff (``RETRY_DELAYS_S``). Both answer a
``RouteAnswer``: the status, the decoded JSON body (``None`` when the body is not JSON) and the
``ETag``.

This module imports nothing of Django at load time: the stdio bridge imports it in a process
that never sets Django up (``stdio``), so the agent host's ``initialize`` does not wait for it.
"""
from __future__ import annotations

import io
import json
import threading
from dataclasses import dataclass
from urllib.parse import urlencode

import anyio
import httpx

# Seconds a stdio tool call waits for the API (a cold model load can take a while).
HTTP_TIMEOUT_S = 180
# The waits before each retry of a request the API answered 503 (it did not process it: the
# database was away, or the server is starting) or whose connection was refused (nothing was
# sent): about 8 s in all, so a restarting API is ridden out and a dead one is reported.
RETRY_DELAYS_S = (0.25, 0.5, 1.0, 2.0, 4.0)
RETRY_AFTER_CAP_S = 4.0

_handler = None
_handler_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class RouteAnswer:
    status: int
    payload: object
    etag: str | None = None


def _decoded(content: bytes):
    try:
        return json.loads(content)
    except ValueError:
        return None


def _encoded(body) -> bytes:
    return b"" if body is None else json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


class InProcessRoutes:
    """Routes of this process, called as the holder of ``key`` on ``host`` (the outer request's);
    each view runs through ``request_thread`` (``loop.run_here``) on the thread serving the ``/mcp``
    request, with its database connection and transaction, never on a pool thread."""

    def __init__(self, *, key: str, workspace, identity, host: str, scheme: str, request_thread):
        self.key = key
        self.workspace = workspace
        self.identity = identity
        self.host = host
        self.scheme = scheme
        self.request_thread = request_thread

    async def request(self, method: str, path: str, *, query: dict | None = None, body=None) -> RouteAnswer:
        return await self.request_thread.call(self.dispatch, method, path, query, body)

    def dispatch(self, method: str, path: str, query: dict | None, body) -> RouteAnswer:
        from django.core.handlers.wsgi import WSGIRequest

        from catalog_app.auth import IN_PROCESS_WORKSPACE

        raw = _encoded(body)
        name, _, port = self.host.partition(":")
        environ = {
            "REQUEST_METHOD": method, "SCRIPT_NAME": "", "PATH_INFO": path,
            "QUERY_STRING": urlencode(query or {}), "CONTENT_TYPE": "application/json",
            "CONTENT_LENGTH": str(len(raw)), "HTTP_AUTHORIZATION": f"Bearer {self.key}", "HTTP_HOST": self.host,
            "SERVER_NAME": name, "SERVER_PORT": port or ("443" if self.scheme == "https" else "80"),
            "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1", "wsgi.input": io.BytesIO(raw),
            "wsgi.url_scheme": self.scheme, "wsgi.errors": io.StringIO(), "wsgi.multithread": True,
            "wsgi.multiprocess": True, "wsgi.run_once": False, "wsgi.version": (1, 0),
            # The bearer check still runs; it need not look the key up again within this request.
            IN_PROCESS_WORKSPACE: (self.key, (self.workspace, self.identity)),
        }
        response = _django_handler().get_response(WSGIRequest(environ))
        return RouteAnswer(response.status_code, _decoded(response.content))


def _django_handler():
    """Django's request handler with the project's middleware, built once per process; unlike
    the WSGI entry point it sends no request_started/finished signals, so the outer request's
    database connection stays open."""
    global _handler
    with _handler_lock:
        if _handler is None:
            from django.core.handlers.base import BaseHandler

            handler = BaseHandler()
            handler.load_middleware()
            _handler = handler
        return _handler


class HttpRoutes:
    """The routes of the service at ``base_url``, called with ``key``. ``sleep`` waits between
    retries (``anyio.sleep``)."""

    def __init__(self, *, base_url: str, key: str, timeout_s: float = HTTP_TIMEOUT_S, sleep=anyio.sleep):
        self._client = httpx.AsyncClient(base_url=base_url.rstrip("/"), timeout=timeout_s,
                                         headers={"Authorization": f"Bearer {key}"})
        self._sleep = sleep

    async def request(self, method: str, path: str, *, query: dict | None = None, body=None,
                      if_none_match: str | None = None) -> RouteAnswer:
        """The answer of ``method path``; a 503 or a refused connection is retried after each of
        ``RETRY_DELAYS_S`` (or the 503's ``Retry-After``, at most ``RETRY_AFTER_CAP_S``), then
        the last 503 is the answer and the last connection error is raised."""
        headers = {"Content-Type": "application/json"} if body is not None else {}
        if if_none_match is not None:
            headers["If-None-Match"] = if_none_match
        for attempt in range(len(RETRY_DELAYS_S) + 1):
            delay = RETRY_DELAYS_S[attempt] if attempt < len(RETRY_DELAYS_S) else None
            try:
                response = await self._client.request(method, path, params=query or None,
                                                      content=_encoded(body) or None, headers=headers)
            except httpx.ConnectError:
                if delay is None:
                    raise
                await self._sleep(delay)
                continue
            if response.status_code != 503 or delay is None:
                break
            await self._sleep(_retry_after(response.headers.get("Retry-After"), delay))
        return RouteAnswer(response.status_code, _decoded(response.content), response.headers.get("ETag"))

    async def aclose(self) -> None:
        await self._client.aclose()


def _retry_after(header: str | None, default: float) -> float:
    """The 503's ``Retry-After`` in seconds (capped), else ``default``."""
    try:
        return min(max(float(header), 0.0), RETRY_AFTER_CAP_S) if header is not None else default
    except ValueError:
        return default
