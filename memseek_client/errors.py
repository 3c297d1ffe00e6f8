"""One exception hierarchy for everything a call can fail with.

An HTTP error becomes the class of its status (``NotFound`` for 404, ...), carrying the
server's error envelope: ``code`` (the stable snake_case ``error``), ``detail``, ``path`` (the
dotted location of the offending value, or ``None``), ``status`` and any ``extra`` members.
A status without a class of its own falls back to ``ClientError`` (4xx) or ``ServerError``
(5xx). Failing to reach the server is ``ConnectionFailed``; running out of time is ``Timeout``;
calling a closed client is ``ClientClosed``;
a 2xx body that is not the documented shape is ``ResponseShapeError``.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any


class MemseekError(Exception):
    """Base of every error this client raises."""

    def __init__(self, code: str, detail: str, path: str | None = None, status: int | None = None,
                 extra: Mapping[str, Any] | None = None):
        message = f"{code}: {detail}" + (f" (at {path})" if path else "")
        super().__init__(f"{status} {message}" if status else message)
        self.code = code
        self.detail = detail
        self.path = path
        self.status = status
        self.extra = MappingProxyType(dict(extra or {}))


class ConnectionFailed(MemseekError):
    """The server could not be reached (after the retries the policy allows)."""


class ClientClosed(MemseekError):
    """The client was closed (``close()``, ``aclose()`` or the end of its ``with`` block)."""


class Timeout(MemseekError):
    """The request did not complete within the client's timeout."""


class ResponseShapeError(MemseekError):
    """A successful response whose body is not the documented shape."""


class ApiError(MemseekError):
    """The server answered with an HTTP error status and (normally) the error envelope;
    ``retry_after`` is its ``Retry-After`` in seconds, when it sent one."""

    status: int
    retry_after: float | None = None


class ClientError(ApiError):
    """A 4xx answer: the request is wrong, and sending it again will not help."""


class BadRequest(ClientError):
    """400."""


class Unauthorized(ClientError):
    """401: no key, or a key the service does not know."""


class Forbidden(ClientError):
    """403: the key may not do this (or an ``Origin`` the server does not allow)."""


class NotFound(ClientError):
    """404: no such record, view, receipt or route in this workspace."""


class MethodNotAllowed(ClientError):
    """405."""


class Conflict(ClientError):
    """409: the request conflicts with stored state (a dedupe key, a stale draft, ...)."""


class PayloadTooLarge(ClientError):
    """413: the body exceeds the server's size limit."""


class UnsupportedMediaType(ClientError):
    """415."""


class Unprocessable(ClientError):
    """422: the body or query string failed validation; ``path`` names the offending value."""


class RateLimited(ClientError):
    """429."""


class ServerError(ApiError):
    """A 5xx answer."""


class Unavailable(ServerError):
    """503: a dependency (the database, the embedding model, a busy retrieval slot) is not
    available right now; the client already retried within its ``RetryPolicy``."""


STATUS_CLASSES: Mapping[int, type[ApiError]] = MappingProxyType({
    400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 405: MethodNotAllowed,
    409: Conflict, 413: PayloadTooLarge, 415: UnsupportedMediaType, 422: Unprocessable,
    429: RateLimited, 503: Unavailable,
})


def error_from_response(status: int, body: bytes, retry_after: float | None = None) -> ApiError:
    """The exception for an error response: its class from ``status``, its fields from the
    envelope ``{"error", "detail", "path", ...}``. A body that is not an envelope (a proxy's
    HTML page, say) keeps the status with the code ``http_<status>`` and the text as detail."""
    cls = STATUS_CLASSES.get(status) or (ClientError if status < 500 else ServerError)
    try:
        envelope = json.loads(body)
    except ValueError:
        envelope = None
    if isinstance(envelope, dict) and isinstance(envelope.get("error"), str):
        extra = {key: value for key, value in envelope.items() if key not in ("error", "detail", "path")}
        path = envelope.get("path")
        error = cls(envelope["error"], str(envelope.get("detail", "")), path if isinstance(path, str) else None,
                    status, extra)
    else:
        error = cls(f"http_{status}", body.decode("utf-8", "replace")[:500], None, status)
    error.retry_after = retry_after
    return error
