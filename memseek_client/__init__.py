"""Typed Python client for Memseek's HTTP API: ``MemseekClient`` (sync) and
``AsyncMemseekClient`` (asyncio), on httpx, with bounded jittered retries on 503 and connection
errors, and one exception hierarchy under ``MemseekError``. Depends on httpx and the standard
library only (no Django)."""
from . import models
from .aio import AsyncMemseekClient
from .client import MemseekClient
from .errors import (ApiError, BadRequest, ClientClosed, ClientError, Conflict, ConnectionFailed, Forbidden,
                     MemseekError, MethodNotAllowed, NotFound, PayloadTooLarge, RateLimited, ResponseShapeError,
                     ServerError, Timeout, Unauthorized, Unavailable, Unprocessable, UnsupportedMediaType)
from .models import RecordInput
from .retry import NO_RETRY, RetryPolicy

__version__ = "0.1.0"

__all__ = [
    "ApiError", "AsyncMemseekClient", "BadRequest", "ClientClosed", "ClientError", "Conflict", "ConnectionFailed",
    "Forbidden", "MemseekClient", "MemseekError", "MethodNotAllowed", "NO_RETRY", "NotFound", "PayloadTooLarge",
    "RateLimited", "RecordInput", "ResponseShapeError", "RetryPolicy", "ServerError", "Timeout", "Unauthorized",
    "Unavailable", "Unprocessable", "UnsupportedMediaType", "models",
]
