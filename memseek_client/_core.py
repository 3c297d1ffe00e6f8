"""What the sync and async clients share: configuration, how a ``Call`` becomes an HTTP
request, how a response becomes a model or an exception, and the retry decision."""
from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar, cast

import httpx

from .decode import decode, encode
from .errors import ClientClosed, ConnectionFailed, MemseekError, ResponseShapeError, Timeout, error_from_response
from .retry import RETRY_STATUSES, RetryPolicy, parse_retry_after, transport_error_is_retryable
from .routes import Call

T = TypeVar("T")
USER_AGENT = "memseek-client/0.1.0"
DEFAULT_TIMEOUT_S = 30.0
# Read-your-writes (the server's docs/replicas.md): a write's response names its WAL position here,
# and the client sends the latest one it saw with every later request, so a read served by a
# replica waits for (or skips a replica without) what this client wrote.
CONSISTENCY_HEADER = "Memseek-Consistency-Token"
NDJSON = "application/x-ndjson"


class ClientCore:
    """``base_url`` is the service root (``http://127.0.0.1:8000``); ``api_key`` the workspace
    key sent as ``Authorization: Bearer``. ``timeout`` is seconds (or an ``httpx.Timeout``) for
    each attempt; ``retry`` bounds and paces retries; ``rng`` is the jitter's random source. The
    clients also take ``transport`` (httpx's, e.g. for a proxy or a Unix socket) and ``sleep``
    (the wait between attempts).

    ``consistency_token`` is the latest WAL position a response of this client's writes named
    (``None`` before the first); it goes out with every request, so this client reads its own
    writes from whichever server answers. Set it to carry a position between clients."""

    def __init__(self, base_url: str, api_key: str | None = None, *, timeout: float | httpx.Timeout = DEFAULT_TIMEOUT_S,
                 retry: RetryPolicy | None = None, headers: Mapping[str, str] | None = None,
                 rng: random.Random | None = None):
        self.base_url = base_url.rstrip("/")
        self.retry = retry or RetryPolicy()
        self._rng = rng or random.Random()
        self._timeout = timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout)
        self._headers = {"Accept": "application/json", "User-Agent": USER_AGENT, **(headers or {})}
        if api_key is not None:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self.consistency_token: str | None = None

    def _request_args(self, call: Call[Any]) -> dict[str, Any]:
        args: dict[str, Any] = {"method": call.method, "url": call.path}
        if call.params:
            args["params"] = {key: _query_value(value) for key, value in call.params.items()}
        if call.body is not None:
            args["content"] = json.dumps(encode(call.body), ensure_ascii=False, allow_nan=False).encode()
            args["headers"] = {"Content-Type": "application/json"}
        if call.ndjson is not None:
            args["content"] = call.ndjson
            args["headers"] = {"Content-Type": NDJSON}
        if self.consistency_token is not None:
            args.setdefault("headers", {})[CONSISTENCY_HEADER] = self.consistency_token
        return args

    def _remember_position(self, response: httpx.Response) -> None:
        """Keep the later of the response's consistency token and the one held."""
        token = response.headers.get(CONSISTENCY_HEADER)
        position = _wal_position(token) if token is not None else None
        held = _wal_position(self.consistency_token) if self.consistency_token is not None else None
        if position is not None and (held is None or position > held):
            self.consistency_token = token

    def _retry_delay_after_response(self, response: httpx.Response, attempt: int) -> float | None:
        if response.status_code not in RETRY_STATUSES:
            return None
        return self.retry.delay(attempt, parse_retry_after(response.headers.get("Retry-After")), self._rng)

    def _retry_delay_after_error(self, error: httpx.TransportError, method: str, attempt: int) -> float | None:
        if not transport_error_is_retryable(error, method):
            return None
        return self.retry.delay(attempt, None, self._rng)


def finish(call: Call[T], response: httpx.Response) -> T:
    """The decoded 2xx body, or the ``ApiError`` of an error status raised."""
    if response.status_code >= 400:
        raise error_from_response(response.status_code, response.content,
                                  parse_retry_after(response.headers.get("Retry-After")))
    try:
        payload = response.json()
    except ValueError as error:
        raise ResponseShapeError("response_shape", f"the body is not JSON: {error}", None,
                                 response.status_code) from error
    # A Call without a model is one whose T is the plain JSON itself.
    return cast(T, payload) if call.result is None else decode(call.result, payload)


def closed_failure(call: Call[Any]) -> ClientClosed:
    return ClientClosed("client_closed", f"{call.method} {call.path}: the client is closed; make a new one")


def transport_failure(error: httpx.TransportError, call: Call[Any]) -> MemseekError:
    where = f"{call.method} {call.path}"
    if isinstance(error, httpx.TimeoutException):
        return Timeout("timeout", f"{where}: {type(error).__name__}: {error}")
    return ConnectionFailed("connection_failed", f"{where}: {type(error).__name__}: {error}")


def _wal_position(token: str) -> int | None:
    """A token (PostgreSQL's ``X/Y`` LSN) as a number to compare; ``None`` for anything else."""
    high, sep, low = token.partition("/")
    try:
        return (int(high, 16) << 32) | int(low, 16) if sep else None
    except ValueError:
        return None


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Sequence) and not isinstance(value, str):
        return ",".join(str(item) for item in value)
    if hasattr(value, "isoformat"):
        return str(value.isoformat())
    return str(value)


def export_params(entity: str | None, cursor: str | None) -> dict[str, str]:
    return {name: value for name, value in (("entity", entity), ("cursor", cursor)) if value is not None}


def line_cursor(line: str) -> str | None:
    """The cursor an export line carries (``None`` for the header and the end line)."""
    cursor = json.loads(line).get("cursor")
    return cursor if isinstance(cursor, str) else None
