"""``brief_neighbours.lend_to_neighbours``: strong hits lend a share of their score to the
passages beside them. Literal cases, then a property test against the rule computed over a
whole conversation (every turn scored, the simple oracle)."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval_app.memory.brief_neighbours import lend_to_neighbours


def test_a_strong_hit_lifts_the_turn_after_it_above_weaker_candidates():
    ranked = [("question", 0.9), ("other", 0.5), ("weak", 0.1)]
    order = lend_to_neighbours(ranked, {"question": ["answer"]}, strong=1, share=0.5)
    assert order == ["question", "other", "answer", "weak"]  # answer: 0 + 0.5 * 0.9 = 0.45


def test_a_candidate_beside_a_strong_hit_adds_the_share_to_its_own_score():
    ranked = [("a", 0.9), ("b", 0.5), ("c", 0.3)]
    assert lend_to_neighbours(ranked, {"a": ["c"]}, strong=1, share=0.25) == ["a", "c", "b"]  # 0.3 + 0.225


def test_a_passage_between_two_strong_hits_takes_the_larger_loan_once():
    ranked = [("a", 0.8), ("c", 0.6), ("d", 0.55)]
    order = lend_to_neighbours(ranked, {"a": ["b"], "c": ["b"]}, strong=2, share=0.5)
    assert order == ["a", "c", "d", "b"]  # b: 0.5 * 0.8 = 0.4 (not 0.4 + 0.3)


def test_only_the_strong_hits_lend():
    ranked = [("a", 0.9), ("b", 0.8), ("c", 0.2)]
    assert lend_to_neighbours(ranked, {"a": [], "b": ["c"]}, strong=1, share=1.0) == ["a", "b", "c"]


def test_share_zero_keeps_the_fused_order_and_appends_the_neighbours():
    ranked = [("a", 0.9), ("b", 0.5)]
    assert lend_to_neighbours(ranked, {"a": ["x"], "b": ["y"]}, strong=2, share=0.0) == ["a", "b", "x", "y"]


@st.composite
def conversations(draw):
    """(turn count, pool as {turn: value}, fused order of the pool, strong count, share)."""
    size = draw(st.integers(min_value=1, max_value=30))
    members = draw(st.lists(st.integers(min_value=0, max_value=size - 1), unique=True, min_size=1))
    values = draw(st.lists(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.75, 1.0]) | st.floats(0, 1.05),
                           min_size=len(members), max_size=len(members)))
    pool = dict(zip(members, values))
    # The fused order: value descending, ties in any order (the engine's own tie-break).
    tie_order = draw(st.permutations(members))
    fused = sorted(tie_order, key=lambda turn: -pool[turn])
    strong = draw(st.integers(min_value=0, max_value=len(fused) + 2))
    share = draw(st.sampled_from([0.0, 0.25, 0.5, 1.0]) | st.floats(0, 1))
    return size, pool, fused, strong, share


def oracle_scores(size: int, pool: dict, fused: list, strong: int, share: float) -> dict:
    """Every turn of the conversation scored by the rule, directly."""
    lenders = set(fused[:strong])
    scores = {}
    for turn in range(size):
        beside = [pool[s] for s in (turn - 1, turn + 1) if s in lenders]
        if turn in pool or beside:
            scores[turn] = pool.get(turn, 0.0) + share * max(beside, default=0.0)
    return scores


@settings(max_examples=400, deadline=None)
@given(conversations())
def test_lending_matches_the_rule_computed_over_the_whole_conversation(case):
    size, pool, fused, strong, share = case
    neighbours = {turn: [n for n in (turn - 1, turn + 1) if 0 <= n < size] for turn in fused[:strong]}
    order = lend_to_neighbours([(turn, pool[turn]) for turn in fused], neighbours, strong=strong, share=share)
    expected = oracle_scores(size, pool, fused, strong, share)
    assert sorted(order) == sorted(expected)
    values = [expected[turn] for turn in order]
    assert values == sorted(values, reverse=True)
    # Equal scores: candidates keep the fused order and come before turns that were no candidate.
    for earlier, later in zip(order, order[1:]):
        if expected[earlier] == expected[later]:
            rank = {turn: index for index, turn in enumerate(fused)}
            assert rank.get(earlier, len(fused)) <= rank.get(later, len(fused))
