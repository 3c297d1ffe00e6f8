"""Evaluating a rank expression over a whole candidate set.

Evaluation runs over every candidate at once (``normalize`` spans all of them), treats a
missing signal as 0, and never returns a non-finite value: it raises ``RankEvaluationError``
(code ``rank_evaluation``) instead. Pure Python: no Django imports.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType

from memseek_site.errors import ApiError

from .rank_expression import (AgeHours, Const, Decay, Max, Normalize, Product, RankNode, Saturate, Score, Sum,
                              rank_children)


class RankEvaluationError(ApiError):
    """Evaluation produced a non-finite value; ``path`` names the node that produced it."""

    path_in_detail = True


@dataclass(frozen=True, slots=True)
class Signals:
    """What a rank expression can read off one candidate.

    ``None`` means missing and evaluates to 0, as does NaN and a non-numeric stored score.
    Timestamps must be timezone-aware.
    """

    similarity: float | None = None
    text_match: float | None = None
    bm25: float | None = None
    bm25_en: float | None = None
    scores: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    created_at: datetime | None = None
    occurred_at: datetime | None = None
    last_accessed: datetime | None = None


def evaluate_rank(node: RankNode, candidates: Sequence[Signals], now: datetime, *, path: str = "rank") -> list[float]:
    """Evaluate ``node`` for every candidate at once; returns one finite value per candidate, in order.

    ``normalize`` spans the whole ``candidates`` sequence, so pass every ranked candidate, not a
    page. ``now`` (timezone-aware) is the reference for ``age_hours``. Raises
    ``RankEvaluationError`` if any node produces a non-finite value (path names the node) and
    ``ValueError`` for a naive ``now`` or timestamp.
    """
    if now.utcoffset() is None:
        raise ValueError("now must be a timezone-aware datetime")
    candidates = tuple(candidates)
    if not candidates:
        return []
    return _evaluate(node, candidates, now, path)


def _evaluate(node: RankNode, candidates: tuple[Signals, ...], now: datetime, path: str) -> list[float]:
    if isinstance(node, (Sum, Max)):
        columns = [_evaluate(child, candidates, now, child_path) for child, child_path in rank_children(node, path)]
        combine = sum if isinstance(node, Sum) else max
        values = [combine(row) for row in zip(*columns)]
    elif isinstance(node, (Product, Normalize, Saturate, Decay)):
        ((child, child_path),) = rank_children(node, path)
        values = _shape(node, _evaluate(child, candidates, now, child_path))
    else:
        values = [_signal(node, candidate, now) for candidate in candidates]
    for index, value in enumerate(values):
        if not math.isfinite(value):
            raise RankEvaluationError("rank_evaluation", f"{node.op} produced a non-finite value ({value}) for "
                                      f"candidate {index}; every value a rank expression produces must be finite", path)
    return values


def _shape(node: Product | Normalize | Saturate | Decay, values: list[float]) -> list[float]:
    if isinstance(node, Product):
        return [node.factor * value for value in values]
    if isinstance(node, Normalize):
        low, high = min(values), max(values)
        if high == low:
            return [0.0] * len(values)
        span = high - low
        return [(value - low) / span for value in values]
    m, e = node.midpoint, node.exponent
    if isinstance(node, Saturate):
        # x^e / (x^e + m^e) written as 1 / (1 + (m/x)^e) so large x or e cannot overflow.
        return [0.0 if value <= 0 else 1.0 / (1.0 + _power(m / value, e)) for value in values]
    return [1.0 / (1.0 + _power(max(0.0, value) / m, e)) for value in values]


def _power(base: float, exponent: float) -> float:
    try:
        return base ** exponent
    except OverflowError:
        return math.inf  # the shaper's limit (0 or 1) is then exact and finite


def _signal(node: RankNode, candidate: Signals, now: datetime) -> float:
    if isinstance(node, Const):
        return node.value
    if isinstance(node, Score):
        return _number(candidate.scores.get(node.name))
    if isinstance(node, AgeHours):
        stamp = getattr(candidate, node.field)
        if stamp is None:
            return 0.0
        if stamp.utcoffset() is None:
            raise ValueError(f"{node.field} must be a timezone-aware datetime")
        return max(0.0, (now - stamp).total_seconds() / 3600.0)
    return _number(getattr(candidate, node.op))


def _number(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return 0.0
    return float(value)
