"""When a failed call is sent again, and how long the client waits first.

Retried: a ``503`` (the service says it is temporarily unavailable), a ``429 rate_limited``
(the key or its workspace passed its rate; the service refused the request before doing any of
it, so a ``POST`` is safe to send again) and a connection that could not be made (the request
never reached the server). A connection lost after the request was sent is retried only for
``GET``, which changes nothing; a ``POST`` may have been applied. Any other 4xx is never
retried, and neither is a timeout (the caller's own bound). Attempts are bounded.

The wait before attempt ``n + 1`` is the server's ``Retry-After`` when it sent one, else
"full jitter" exponential backoff: a uniform draw from ``[0, min(backoff_max, backoff_base *
2**(n - 1))]``, so clients that failed together do not come back together.
"""
from __future__ import annotations

import email.utils
import random
import time
from dataclasses import dataclass

import httpx

RETRY_STATUSES = frozenset({429, 503})


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """``attempts`` is the total number of tries (1 = never retry). A ``Retry-After`` above
    ``max_retry_after`` seconds is not waited out: the error is raised at once."""

    attempts: int = 3
    backoff_base: float = 0.5
    backoff_max: float = 8.0
    max_retry_after: float = 30.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("attempts must be at least 1")
        if self.backoff_base < 0 or self.backoff_max < 0 or self.max_retry_after < 0:
            raise ValueError("backoff_base, backoff_max and max_retry_after must not be negative")

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float | None:
        """Seconds to wait after failed attempt number ``attempt`` (1-based), or ``None`` when
        the call must not be tried again."""
        if attempt >= self.attempts:
            return None
        if retry_after is not None:
            return retry_after if retry_after <= self.max_retry_after else None
        return rng.uniform(0, min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1)))


NO_RETRY = RetryPolicy(attempts=1)


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """``Retry-After`` in seconds: delta-seconds or an HTTP date; ``None`` if absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def transport_error_is_retryable(error: httpx.TransportError, method: str) -> bool:
    """A connection never made is safe to retry for every method; one lost mid-exchange only
    for ``GET``."""
    if isinstance(error, (httpx.ConnectError, httpx.ConnectTimeout)):
        return True
    return method == "GET" and isinstance(error, (httpx.RemoteProtocolError, httpx.ReadError))
