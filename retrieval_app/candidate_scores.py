"""Rescoring fused candidates with five factors, the adaptive floor, and read-time trust.

Pure Python over frozen dataclasses; no Django. Every factor lies in [0, 1]:

* fusion     = rrf / best rrf of the pool (the best fused candidate is 1);
* recency    = 0.5 ** (age_hours / retrieval.recencyHalfLifeHours), age of ``occurred_at`` at
               the reference instant (``asOf`` when given, else now), never negative;
* frequency  = n / (n + retrieval.frequencyMidpoint), n = the record's touches on read;
* importance = the stored ``scores.importance`` mapped through its processor's declared scale
               (values outside are clamped); 0.5 when the record has none;
* confidence = likewise for ``scores.confidence``.

``base = sum(weight_f * factor_f) / sum(weights)`` (weights are relative, so the base lies in
[0, 1]). Value-aware selection, when enabled, blends a learned utility in [0, 1] into it:
``score = (1 - w) * base + w * utility`` (a record without a learned utility gets the neutral
0.5); otherwise ``score = base``. Order: score desc, then ``occurred_at`` desc, ``seq`` desc,
id asc (the engine's scored order).

The adaptive floor keeps a candidate when ``score >= max(minimum, ratio * best score)``.

Trust (read-time, never stored): ``score = 0.5 * confidence + 0.25 / (1 + depth) + 0.25 *
min(corroboration, 3) / 3``, where corroboration is the number of legs that found the record.
"""
from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType

from search_app.engine.result_order import order_scored

FACTORS = ("fusion", "recency", "frequency", "importance", "confidence")
NEUTRAL = 0.5


@dataclass(frozen=True, slots=True)
class Candidate:
    id: uuid.UUID
    rrf: float
    occurred_at: datetime
    seq: int
    access_count: int
    importance: float | None  # the stored score, on its processor's scale
    confidence: float | None
    utility: float | None = None  # learned utility in [0, 1], when value-aware selection knows one


@dataclass(frozen=True, slots=True)
class ScoringConfig:
    weights: Mapping[str, float]
    half_life_hours: float
    frequency_midpoint: float
    importance_scale: tuple[float, float] | None = None
    confidence_scale: tuple[float, float] | None = None
    value_aware_weight: float | None = None  # None: value-aware selection is off


@dataclass(frozen=True, slots=True)
class Factor:
    value: float
    weight: float  # normalised: the weights sum to 1
    contribution: float


@dataclass(frozen=True, slots=True)
class Scored:
    candidate: Candidate
    factors: Mapping[str, Factor]
    base: float
    utility: float | None  # the utility blended in (None: value-aware selection off)
    score: float

    @property
    def id(self) -> uuid.UUID:
        return self.candidate.id

    @property
    def value(self) -> float:
        return self.score

    @property
    def occurred_at(self) -> datetime:
        return self.candidate.occurred_at

    @property
    def seq(self) -> int:
        return self.candidate.seq


def rescore(candidates: Iterable[Candidate], config: ScoringConfig, reference: datetime) -> list[Scored]:
    """Score every candidate and return them in scored order."""
    candidates = list(candidates)
    if not candidates:
        return []
    best_rrf = max(c.rrf for c in candidates)
    total_weight = sum(config.weights[f] for f in FACTORS)
    if total_weight <= 0:
        raise ValueError("at least one factor weight must be above 0")
    scored = []
    for candidate in candidates:
        values = {
            "fusion": candidate.rrf / best_rrf if best_rrf > 0 else 0.0,
            "recency": recency(candidate.occurred_at, reference, config.half_life_hours),
            "frequency": frequency(candidate.access_count, config.frequency_midpoint),
            "importance": scaled(candidate.importance, config.importance_scale),
            "confidence": scaled(candidate.confidence, config.confidence_scale),
        }
        factors = {}
        for name in FACTORS:
            weight = config.weights[name] / total_weight
            factors[name] = Factor(values[name], weight, weight * values[name])
        base = sum(f.contribution for f in factors.values())
        utility = None
        score = base
        if config.value_aware_weight is not None:
            utility = NEUTRAL if candidate.utility is None else min(1.0, max(0.0, candidate.utility))
            score = (1 - config.value_aware_weight) * base + config.value_aware_weight * utility
        scored.append(Scored(candidate, MappingProxyType(factors), base, utility, score))
    return order_scored(scored)


def recency(occurred_at: datetime, reference: datetime, half_life_hours: float) -> float:
    age_hours = max(0.0, (reference - occurred_at).total_seconds() / 3600)
    return 0.5 ** (age_hours / half_life_hours)


def frequency(access_count: int, midpoint: float) -> float:
    count = max(0, access_count)
    return count / (count + midpoint)


def scaled(value, scale: tuple[float, float] | None) -> float:
    """A stored score on ``scale`` (None: already 0-1) mapped to [0, 1]; NEUTRAL when absent."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return NEUTRAL
    low, high = scale if scale is not None else (0.0, 1.0)
    if high <= low:
        return NEUTRAL
    return min(1.0, max(0.0, (value - low) / (high - low)))


@dataclass(frozen=True, slots=True)
class Floor:
    ratio: float
    minimum: float
    best: float
    threshold: float


def floor_threshold(scores: Iterable[float], *, ratio: float, minimum: float) -> Floor:
    """``max(minimum, ratio * best)`` over ``scores`` (best 0 for an empty pool)."""
    best = max(scores, default=0.0)
    return Floor(ratio, minimum, best, max(minimum, ratio * best))


def apply_floor(scored: list[Scored], floor: Floor) -> tuple[list[Scored], list[Scored]]:
    """``(kept, dropped)``, both in the given order."""
    kept = [s for s in scored if s.score >= floor.threshold]
    dropped = [s for s in scored if s.score < floor.threshold]
    return kept, dropped


def trust(*, depth: int, ready: bool, corroboration: int, confidence: float) -> dict:
    """The read-time trust breakdown of one entry (see the module docstring)."""
    value = 0.5 * confidence + 0.25 / (1 + depth) + 0.25 * min(corroboration, 3) / 3
    return {"depth": depth, "ready": ready, "derived": depth > 0, "corroboration": corroboration,
            "confidence": round(confidence, 6), "score": round(value, 6)}
