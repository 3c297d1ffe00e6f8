"""Rescoring with the five factors, the adaptive floor, value-aware blending and trust, on
literal inputs (pure: no database)."""
import math
import uuid
from datetime import datetime, timedelta, timezone

import pytest

from retrieval_app.candidate_scores import (Candidate, ScoringConfig, apply_floor, floor_threshold, frequency, recency,
                                   rescore, scaled, trust)

NOW = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)
WEIGHTS = {"fusion": 0.55, "recency": 0.15, "frequency": 0.1, "importance": 0.1, "confidence": 0.1}


def candidate(rrf=1 / 61, *, hours_old=0.0, seq=1, access=0, importance=None, confidence=None, utility=None):
    return Candidate(uuid.UUID(int=seq), rrf, NOW - timedelta(hours=hours_old), seq, access, importance, confidence,
                     utility)


def config(**overrides):
    values = {"weights": WEIGHTS, "half_life_hours": 168, "frequency_midpoint": 5, "importance_scale": (1, 10),
              "confidence_scale": (0, 1)}
    values.update(overrides)
    return ScoringConfig(**values)


def test_factors_and_weights_compose_the_score():
    best = candidate(2 / 61, hours_old=168, access=5, importance=10, confidence=0.5, seq=1)
    half = candidate(1 / 61, hours_old=0, access=0, importance=1, confidence=None, seq=2)
    first, second = rescore([half, best], config(), NOW)
    assert first.id == best.id
    values = {name: factor.value for name, factor in first.factors.items()}
    assert values == pytest.approx({"fusion": 1.0, "recency": 0.5, "frequency": 0.5, "importance": 1.0,
                                    "confidence": 0.5})
    assert first.score == pytest.approx(0.55 + 0.15 * 0.5 + 0.1 * 0.5 + 0.1 + 0.1 * 0.5)
    assert {name: factor.value for name, factor in second.factors.items()} == pytest.approx(
        {"fusion": 0.5, "recency": 1.0, "frequency": 0.0, "importance": 0.0, "confidence": 0.5})
    assert second.score == pytest.approx(0.55 * 0.5 + 0.15 + 0.05)
    assert sum(f.contribution for f in first.factors.values()) == pytest.approx(first.score)


def test_weights_are_relative():
    doubled = {name: 2 * weight for name, weight in WEIGHTS.items()}
    one = rescore([candidate(importance=4)], config(), NOW)[0]
    two = rescore([candidate(importance=4)], config(weights=doubled), NOW)[0]
    assert one.score == pytest.approx(two.score)
    assert two.factors["fusion"].weight == pytest.approx(0.55)


def test_weights_change_the_order():
    fused_best = candidate(2 / 61, importance=1, seq=1)
    important = candidate(1 / 62, importance=10, seq=2)
    assert [s.id for s in rescore([fused_best, important], config(), NOW)] == [fused_best.id, important.id]
    only_importance = {name: 0.0 for name in WEIGHTS} | {"importance": 1.0}
    assert [s.id for s in rescore([fused_best, important], config(weights=only_importance), NOW)] == \
        [important.id, fused_best.id]


def test_ties_fall_back_to_recency_then_seq():
    older = candidate(seq=1, hours_old=0)
    newer = candidate(seq=2, hours_old=0)
    assert [s.id for s in rescore([older, newer], config(), NOW)] == [newer.id, older.id]


def test_recency_halves_every_half_life_and_never_exceeds_one():
    assert recency(NOW - timedelta(hours=336), NOW, 168) == pytest.approx(0.25)
    assert recency(NOW + timedelta(hours=5), NOW, 168) == 1.0


def test_frequency_saturates_at_the_midpoint():
    assert [frequency(n, 5) for n in (0, 5, 15)] == pytest.approx([0.0, 0.5, 0.75])


@pytest.mark.parametrize(("value", "scale", "expected"), [
    (None, (1, 10), 0.5), ("high", (1, 10), 0.5), (True, (0, 1), 0.5), (float("nan"), (0, 1), 0.5),
    (5.5, (1, 10), 0.5), (20, (1, 10), 1.0), (-3, (1, 10), 0.0), (0.7, None, 0.7)])
def test_stored_scores_map_through_their_scale(value, scale, expected):
    assert scaled(value, scale) == pytest.approx(expected)


def test_value_aware_blends_learned_utility_with_a_neutral_prior():
    known, unknown = candidate(seq=1, utility=1.0), candidate(seq=2)
    scored = {s.id: s for s in rescore([known, unknown], config(value_aware_weight=0.2), NOW)}
    for item, utility in ((known, 1.0), (unknown, 0.5)):
        result = scored[item.id]
        assert result.utility == utility
        assert result.score == pytest.approx(0.8 * result.base + 0.2 * utility)
    off = rescore([known], config(), NOW)[0]
    assert off.utility is None and off.score == off.base


def test_adaptive_floor_is_relative_to_the_best_score_with_a_minimum():
    floor = floor_threshold([0.8, 0.3, 0.2], ratio=0.35, minimum=0.0)
    assert (floor.best, floor.threshold) == (0.8, pytest.approx(0.28))
    assert floor_threshold([0.1], ratio=0.35, minimum=0.5).threshold == 0.5
    assert floor_threshold([], ratio=0.35, minimum=0.0).threshold == 0.0
    scored = rescore([candidate(2 / 61, seq=1, importance=10), candidate(1 / 200, seq=2, importance=1)],
                     config(weights={**{n: 0.0 for n in WEIGHTS}, "fusion": 1.0}), NOW)
    kept, dropped = apply_floor(scored, floor_threshold([s.score for s in scored], ratio=0.35, minimum=0.0))
    assert [s.candidate.seq for s in kept] == [1]
    assert [s.candidate.seq for s in dropped] == [2]


def test_a_score_equal_to_the_floor_passes():
    scored = rescore([candidate(seq=1)], config(), NOW)
    floor = floor_threshold([scored[0].score], ratio=1.0, minimum=0.0)
    assert apply_floor(scored, floor) == (scored, [])


def test_trust_breakdown():
    assert trust(depth=0, ready=True, corroboration=3, confidence=1.0) == {
        "depth": 0, "ready": True, "derived": False, "corroboration": 3, "confidence": 1.0, "score": 1.0}
    derived = trust(depth=1, ready=True, corroboration=1, confidence=0.5)
    assert derived["derived"] is True
    assert derived["score"] == pytest.approx(0.25 + 0.125 + 0.25 / 3, abs=1e-6)
    assert trust(depth=0, ready=True, corroboration=9, confidence=0)["score"] == trust(
        depth=0, ready=True, corroboration=3, confidence=0)["score"]


def test_all_zero_weights_are_refused():
    with pytest.raises(ValueError):
        rescore([candidate()], config(weights={name: 0.0 for name in WEIGHTS}), NOW)
    assert math.isfinite(rescore([candidate(0.0)], config(), NOW)[0].score)
