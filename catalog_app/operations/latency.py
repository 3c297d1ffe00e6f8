"""Latency histograms with fixed buckets, so counts from any number of processes add up.

Bucket ``i`` holds the durations ``d`` with ``BOUNDS_MS[i-1] < d <= BOUNDS_MS[i]`` (bucket 0:
``d <= BOUNDS_MS[0]``); the last bucket, ``len(BOUNDS_MS)``, holds everything slower than the
last bound. The bounds grow by a quarter of a doubling (about 19 %), so a percentile read from
the buckets names the bucket's upper bound, never more than 19 % above the true value. Pure:
no database, no Django.
"""
from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence

# 2 ** (k / 4) milliseconds for k = 0 .. 63: 1 ms up to about 55 s.
BOUNDS_MS: tuple[float, ...] = tuple(round(2 ** (k / 4), 6) for k in range(64))
BUCKETS = len(BOUNDS_MS) + 1


def bucket_of(seconds: float) -> int:
    """The bucket a request of ``seconds`` falls into."""
    return bisect_left(BOUNDS_MS, seconds * 1000.0)


def percentile_bound_ms(counts: Sequence[int], q: float) -> float | None:
    """The upper bound in milliseconds of the bucket holding the nearest-rank ``q``-quantile
    (``0 < q <= 1``) of the durations ``counts`` describes; ``math.inf`` when that is the
    overflow bucket, ``None`` when there are no durations."""
    total = sum(counts)
    if total == 0:
        return None
    rank = max(1, math.ceil(q * total))
    seen = 0
    for index, count in enumerate(counts):
        seen += count
        if seen >= rank:
            return BOUNDS_MS[index] if index < len(BOUNDS_MS) else math.inf
    raise AssertionError("unreachable: the rank is at most the total")


def add_counts(left: Sequence[int], right: Sequence[int]) -> list[int]:
    """Bucket-wise sum of two histograms."""
    return [a + b for a, b in zip(left, right, strict=True)]


def format_ms(value: float | None) -> str:
    """A bound for display: ``≤ 12 ms``-style numbers without the sign; ``—`` for none."""
    if value is None:
        return "—"
    if math.isinf(value):
        return f"> {BOUNDS_MS[-1] / 1000:.0f} s"
    if value >= 1000:
        return f"{value / 1000:.2f} s"
    return f"{value:.1f} ms" if value < 10 else f"{value:.0f} ms"
