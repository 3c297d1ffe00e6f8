"""Weighted RRF arithmetic from the spec, tie-breaking, and the post-fusion boost."""
import random
from datetime import datetime, timedelta, timezone
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from search_app.engine.fusion import FusedHit, apply_boost, order_fused, rrf_fuse, sweep_weight_ratio
from search_app.engine.result_order import public_scores, score_bounds, scored_tie_break_key


def by_id(hits):
    return {hit.id: hit for hit in hits}


def order(hits):
    return [hit.id for hit in hits]


# --- the worked example -----------------------------------------------------------------------

def test_worked_example_agreement_beats_either_source_alone():
    hits = rrf_fuse([("events", 1.0, ["x", "e2", "e3"]), ("reflections", 1.1, ["r1", "r2", "r3", "x"])],
                    rank_constant=60)
    found = by_id(hits)
    assert round(found["x"].rrf, 6) == 0.033581
    assert found["x"].rrf == pytest.approx(1.0 / 61 + 1.1 / 64)
    assert round(found["r1"].rrf, 6) == 0.018033
    assert dict(found["x"].source_ranks) == {"events": 1, "reflections": 4}
    assert dict(found["r1"].source_ranks) == {"reflections": 1}
    assert order(hits)[:2] == ["x", "r1"]

    events_alone = rrf_fuse([("events", 1.0, ["y"]), ("reflections", 1.1, [])], rank_constant=60)
    assert round(events_alone[0].rrf, 6) == 0.016393
    assert found["x"].rrf > events_alone[0].rrf and found["x"].rrf > found["r1"].rrf


def test_rrf_value_is_the_ranking_value_until_boosted():
    (hit,) = rrf_fuse([("a", 2.0, ["x"])], rank_constant=1)
    assert hit.rrf == hit.value == 1.0


# --- reading the two constants ----------------------------------------------------------------

@pytest.mark.parametrize("rank_constant, first, tenth, thirtieth, digits, spread", [
    (10, 0.0909, 0.0500, 0.0250, 4, 3.6),
    (60, 0.0164, 0.0143, 0.0111, 4, 1.5),
    (200, 0.00498, 0.00476, 0.00435, 5, 1.1),
])
def test_rank_constant_table(rank_constant, first, tenth, thirtieth, digits, spread):
    hits = rrf_fuse([("only", 1.0, [f"r{i}" for i in range(1, 31)])], rank_constant=rank_constant)
    found = by_id(hits)
    assert round(found["r1"].rrf, digits) == first
    assert round(found["r10"].rrf, digits) == tenth
    assert round(found["r30"].rrf, digits) == thirtieth
    assert round(found["r1"].rrf / found["r30"].rrf, 1) == spread
    assert order(hits) == [f"r{i}" for i in range(1, 31)]


# --- weight against rank_constant -------------------------------------------------------------

def test_sweep_threshold_for_fifteen_records_at_sixty():
    assert sweep_weight_ratio(60, 15) == 75 / 61
    assert round(sweep_weight_ratio(60, 15), 2) == 1.23


@pytest.mark.parametrize("weight_a, a_sweeps", [(1.22, False), (1.24, True), (1.1, False), (1.3, True)])
def test_weight_ratio_around_the_threshold(weight_a, a_sweeps):
    a_ids = [f"a{i}" for i in range(1, 16)]  # k_A = 15
    hits = rrf_fuse([("a", weight_a, a_ids), ("b", 1.0, ["b1"])], rank_constant=60)
    ranked = order(hits)
    assert (ranked.index("a15") < ranked.index("b1")) is a_sweeps
    if a_sweeps:
        assert ranked[:15] == a_ids  # the weighted list sweeps the top


def test_weight_one_point_three_row():
    hits = by_id(rrf_fuse([("reflections", 1.3, [f"r{i}" for i in range(1, 16)]), ("events", 1.0, ["e1"])],
                          rank_constant=60))
    assert round(hits["r15"].rrf, 5) == 0.01733
    assert round(hits["e1"].rrf, 5) == 0.01639


def test_ratio_exactly_at_the_threshold_is_an_exact_tie():
    hits = by_id(rrf_fuse([("a", 75, [f"a{i}" for i in range(1, 16)]), ("b", 61, ["b1"])], rank_constant=60))
    assert hits["a15"].rrf == hits["b1"].rrf == 1.0


@pytest.mark.parametrize("weights", [(10.0, 20.0), (0.5, 1.0), (100, 200)])
def test_weights_that_scale_together_merge_identically(weights):
    rng = random.Random(7)
    pool = [f"id{i}" for i in range(60)]
    lists = [rng.sample(pool, 30), rng.sample(pool, 25), rng.sample(pool, 10)]

    def fuse(w_a, w_b):
        return rrf_fuse([("a", w_a, lists[0]), ("b", w_b, lists[1]), ("c", w_b, lists[2])], rank_constant=60)

    base, scaled = fuse(1.0, 2.0), fuse(*weights)
    assert order(base) == order(scaled)
    assert [dict(hit.source_ranks) for hit in base] == [dict(hit.source_ranks) for hit in scaled]
    factor = weights[0] / 1.0
    assert [hit.rrf * factor for hit in base] == pytest.approx([hit.rrf for hit in scaled])


# --- positions, duplicates, ties --------------------------------------------------------------

def test_duplicate_id_counts_once_at_its_first_position():
    (x, y) = rrf_fuse([("a", 1.0, ["x", "y", "x"])], rank_constant=60)
    assert x.id == "x" and x.rrf == pytest.approx(1 / 61) and dict(x.source_ranks) == {"a": 1}
    assert y.rrf == pytest.approx(1 / 62)


def test_default_tie_break_is_best_position_then_source_order():
    hits = rrf_fuse([("a", 1.0, ["p", "q"]), ("b", 1.0, ["s", "t"]), ("c", 1.0, ["u"])], rank_constant=60)
    assert order(hits) == ["p", "s", "u", "q", "t"]


def test_caller_tie_break_uses_the_scored_order():
    t0 = datetime(2026, 7, 1, tzinfo=timezone.utc)
    meta = {"p": (t0, 1), "s": (t0 + timedelta(hours=1), 2), "u": (t0, 9)}
    hits = rrf_fuse([("a", 1.0, ["p"]), ("b", 1.0, ["s"]), ("c", 1.0, ["u"])], rank_constant=60,
                    tie_break=lambda rid: scored_tie_break_key(*meta[rid], rid))
    assert order(hits) == ["s", "u", "p"]  # newer occurred_at, then higher seq


def test_public_scores_over_the_merged_pool():
    hits = rrf_fuse([("a", 1.0, ["x", "y"]), ("b", 1.0, ["x", "z"])], rank_constant=60)
    low, high = score_bounds(hit.value for hit in hits)
    assert public_scores([hit.value for hit in hits[:2]], low, high)[0] == 1.0


@pytest.mark.parametrize("sources, rank_constant", [
    ([("a", 1.0, ["x"]), ("a", 1.0, ["y"])], 60),
    ([("a", 0, ["x"])], 60),
    ([("a", -1.0, ["x"])], 60),
    ([("a", float("inf"), ["x"])], 60),
    ([("a", True, ["x"])], 60),
    ([("a", 1.0, ["x"])], 0),
    ([("a", 1.0, ["x"])], float("nan")),
])
def test_invalid_fusion_inputs(sources, rank_constant):
    with pytest.raises(ValueError):
        rrf_fuse(sources, rank_constant=rank_constant)


def test_fused_hits_are_frozen_and_source_ranks_read_only():
    (hit,) = rrf_fuse([("a", 1.0, ["x"])], rank_constant=60)
    with pytest.raises(AttributeError):
        hit.rrf = 2.0
    with pytest.raises(TypeError):
        hit.source_ranks["b"] = 1
    assert hash(hit) == hash(FusedHit("x", hit.rrf, hit.value, {"a": 1}))


# --- boost ------------------------------------------------------------------------------------

def test_boost_multiplies_rrf_by_max_zero_boost():
    hits = rrf_fuse([("a", 1.0, ["x", "y", "z"])], rank_constant=60)
    boosted = apply_boost(hits, [1.0, 3.0, -2.0])
    assert order(boosted) == ["x", "y", "z"]  # input order kept
    assert [hit.value for hit in boosted] == [pytest.approx(1 / 61), pytest.approx(3 / 62), 0.0]
    assert [hit.rrf for hit in boosted] == [hit.rrf for hit in hits]
    assert order(order_fused(boosted)) == ["y", "x", "z"]


def test_boost_rejects_misaligned_or_non_finite_values():
    hits = rrf_fuse([("a", 1.0, ["x", "y"])], rank_constant=60)
    with pytest.raises(ValueError):
        apply_boost(hits, [1.0])
    with pytest.raises(ValueError):
        apply_boost(hits, [1.0, float("nan")])


def test_order_fused_ties_follow_the_caller_key_then_current_order():
    hits = apply_boost(rrf_fuse([("a", 1.0, ["x", "y"]), ("b", 1.0, ["w"])], rank_constant=60), [0.0, 0.0, 1.0])
    assert order(order_fused(hits)) == ["y", "x", "w"]
    assert order(order_fused(hits, tie_break=lambda rid: rid)) == ["y", "w", "x"]


def oracle_rrf(sources, rank_constant, tie_break=None):
    """The simple form: every record's exact sum of weight / (constant + first position), then one
    sort of every record by (sum desc, tie-break, best position, source order)."""
    constant = Fraction(rank_constant)
    sums, ranks, best = {}, {}, {}
    for index, (name, weight, ids) in enumerate(sources):
        for position, record_id in enumerate(ids, start=1):
            if name in ranks.setdefault(record_id, {}):
                continue
            ranks[record_id][name] = position
            sums[record_id] = sums.get(record_id, Fraction(0)) + Fraction(weight) / (constant + position)
            best[record_id] = min(best.get(record_id, (position, index)), (position, index))
    order = sorted(sums, key=lambda i: (-sums[i], tie_break(i) if tie_break else (), best[i]))
    return [(i, float(sums[i]), dict(ranks[i])) for i in order]


@settings(max_examples=300, deadline=None)
@given(lists=st.lists(st.tuples(st.sampled_from([0.5, 1.0, 1.1, 2.0, 3.0, 1e-3]),
                                st.lists(st.integers(0, 12), max_size=14)), max_size=4),
       rank_constant=st.sampled_from([1, 2, 60, 0.5, 7.25]), with_tie_break=st.booleans())
def test_rrf_fuse_matches_the_exact_sum_sorted_once(lists, rank_constant, with_tie_break):
    """``rrf_fuse`` (cached shares, float sums ordered first, fractions only among equal floats)
    merges as the oracle does: same ids, order, rrf values and source ranks."""
    sources = [(f"s{i}", weight, ids) for i, (weight, ids) in enumerate(lists)]
    tie_break = (lambda record_id: -record_id) if with_tie_break else None
    got = rrf_fuse(sources, rank_constant=rank_constant, tie_break=tie_break)
    assert [(hit.id, hit.rrf, dict(hit.source_ranks)) for hit in got] == oracle_rrf(sources, rank_constant, tie_break)
