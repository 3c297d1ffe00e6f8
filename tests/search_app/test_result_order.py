"""Public scores (min-max over the ranked pool) and the scored and structured orders."""
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from search_app.engine.rank_evaluate import Signals, evaluate_rank
from search_app.engine.rank_expression import parse_rank
from search_app.engine.result_order import (
    Descending, order_scored, order_structured, public_scores, score_bounds, scored_sort_key,
)
T0 = datetime(2026, 7, 1, 10, 0, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Item:
    id: object
    value: float = 0.0
    occurred_at: datetime = T0
    seq: int = 0
    fields: dict = field(default_factory=dict)


@dataclass(frozen=True)
class OrderKey:  # the shape SearchSpec's order_by entries expose
    field: str
    direction: str


def uid(n: int) -> uuid.UUID:
    return uuid.UUID(int=n)


# --- public scores ----------------------------------------------------------------------------

def test_nine_five_two_with_k_two_scores_one_and_three_sevenths():
    # Spec: rank ["score", "importance"] over importance 2/9/5 with k: 2.
    rows = [Item(id=uid(1), seq=1), Item(id=uid(2), seq=2), Item(id=uid(3), seq=3)]
    importance = {uid(1): 2, uid(2): 9, uid(3): 5}
    values = evaluate_rank(parse_rank(["score", "importance"]),
                           [Signals(scores={"importance": importance[row.id]}) for row in rows], T0)
    ranked = order_scored(Item(id=row.id, value=v, seq=row.seq) for row, v in zip(rows, values))
    low, high = score_bounds(item.value for item in ranked)  # bounds from the whole ranked pool
    page = ranked[:2]
    assert [item.value for item in page] == [9.0, 5.0]
    assert public_scores([item.value for item in page], low, high) == [1.0, pytest.approx(3 / 7)]


def test_full_pool_projection():
    assert public_scores([8, 5, 2], 2, 8) == [1.0, 0.5, 0.0]


def test_prefix_keeps_the_pool_bounds():
    assert public_scores([8, 5], 2, 8) == [1.0, 0.5]


def test_ties_all_score_one():
    assert public_scores([7, 7], 7, 7) == [1.0, 1.0]


def test_empty_values_give_empty_scores():
    assert public_scores([], 0, 1) == []


def test_negative_and_large_values_project_into_unit_range():
    assert public_scores([-1.0, -3.0, -5.0], -5.0, -1.0) == [1.0, 0.5, 0.0]


@pytest.mark.parametrize("values, low, high", [
    ([1.0], float("nan"), 2.0),
    ([1.0], 0.0, float("nan")),
    ([1.0], float("-inf"), 2.0),
    ([3.0], 0.0, 2.0),
    ([-0.5], 0.0, 2.0),
    ([float("nan")], 0.0, 2.0),
    ([1.0], 2.0, 0.0),
])
def test_public_scores_rejects_bad_bounds_and_values_outside(values, low, high):
    with pytest.raises(ValueError):
        public_scores(values, low, high)


def test_score_bounds():
    assert score_bounds([5, 9, 2]) == (2, 9)
    with pytest.raises(ValueError):
        score_bounds([])
    with pytest.raises(ValueError):
        score_bounds([1.0, float("inf")])


# --- scored order -----------------------------------------------------------------------------

def test_scored_order_value_then_occurred_at_then_seq_desc_then_id_asc():
    items = [
        Item(id=uid(9), value=1.0, occurred_at=T0, seq=5),
        Item(id=uid(3), value=2.0, occurred_at=T0, seq=1),
        Item(id=uid(7), value=1.0, occurred_at=T0 + timedelta(hours=1), seq=1),  # newer wins the tie
        Item(id=uid(5), value=1.0, occurred_at=T0, seq=6),  # higher seq wins among equal times
        Item(id=uid(2), value=1.0, occurred_at=T0, seq=5),  # same seq as uid(9): id ascending
    ]
    assert [item.id for item in order_scored(items)] == [uid(3), uid(7), uid(5), uid(2), uid(9)]


item_strategy = st.builds(
    Item, id=st.integers(0, 6).map(uid), value=st.sampled_from([0.0, -0.0, 0.5, 1.0, 2.5, 1e-300, -3.0]),
    occurred_at=st.one_of(st.none(), st.integers(0, 3).map(lambda h: T0 + timedelta(hours=h)),
                          st.just(datetime(2026, 7, 1, 10, 0))),
    seq=st.integers(0, 4))


@settings(max_examples=300, deadline=None)
@given(items=st.lists(item_strategy, max_size=30))
def test_scored_order_is_the_sort_by_the_whole_scored_key(items):
    """``order_scored`` breaks ties lazily (only runs of equal values build the tie-break key);
    the oracle sorts every item by ``scored_sort_key``."""
    oracle = sorted(items, key=lambda item: scored_sort_key(item.value, item.occurred_at, item.seq, item.id))
    assert [id(item) for item in order_scored(items)] == [id(item) for item in oracle]


def test_scored_order_ties_do_not_change_values():
    items = [Item(id=uid(1), value=0.5, seq=1), Item(id=uid(2), value=0.5, seq=2)]
    ordered = order_scored(items)
    assert [item.id for item in ordered] == [uid(2), uid(1)]
    assert public_scores([item.value for item in ordered], 0.5, 0.5) == [1.0, 1.0]


def test_scored_order_rejects_non_finite_values():
    with pytest.raises(ValueError):
        order_scored([Item(id=uid(1), value=float("nan"))])


def test_uuid_ids_sort_like_their_text():
    a, b = uuid.UUID("0000000a-0000-0000-0000-000000000000"), uuid.UUID("f0000000-0000-0000-0000-000000000000")
    assert scored_sort_key(1.0, T0, 1, a) < scored_sort_key(1.0, T0, 1, b)


def test_descending_wrapper():
    assert sorted([1, 3, 2], key=Descending) == [3, 2, 1]
    assert Descending(2) == Descending(2)


# --- structured order -------------------------------------------------------------------------

def ids(items):
    return [item.id for item in items]


def test_structured_asc_and_desc_put_missing_values_last():
    items = [Item(id="a", seq=1, fields={"p": 2}), Item(id="b", seq=2, fields={}),
             Item(id="c", seq=3, fields={"p": 1}), Item(id="d", seq=4, fields={"p": None})]
    assert ids(order_structured(items, [OrderKey("p", "asc")])) == ["c", "a", "b", "d"]
    assert ids(order_structured(items, [OrderKey("p", "desc")])) == ["a", "c", "b", "d"]


def test_structured_fields_compare_in_declared_order_then_seq_asc_then_id():
    items = [
        Item(id="e", seq=5, fields={"team": "b", "due": T0}),
        Item(id="d", seq=4, fields={"team": "a", "due": T0}),
        Item(id="c", seq=3, fields={"team": "a", "due": T0 + timedelta(days=1)}),
        Item(id="b", seq=1, fields={"team": "b", "due": T0}),
        Item(id="a", seq=1, fields={"team": "b", "due": T0}),
    ]
    order = [("team", "desc"), ("due", "asc")]
    assert ids(order_structured(items, order)) == ["a", "b", "e", "d", "c"]


def test_structured_typed_values_numbers_booleans_datetimes():
    items = [Item(id="x", seq=1, fields={"n": 2.5, "flag": True}), Item(id="y", seq=2, fields={"n": 10, "flag": False}),
             Item(id="z", seq=3, fields={"n": float("nan"), "flag": None})]
    assert ids(order_structured(items, [("n", "desc")])) == ["y", "x", "z"]  # NaN counts as missing
    assert ids(order_structured(items, [("flag", "asc")])) == ["y", "x", "z"]
    assert ids(order_structured(items, [("flag", "desc")])) == ["x", "y", "z"]


def test_structured_custom_field_reader():
    items = [Item(id="a", seq=1), Item(id="b", seq=2)]
    ranks = {"a": 2, "b": 1}
    assert ids(order_structured(items, [("r", "asc")], field_value=lambda item, name: ranks[item.id])) == ["b", "a"]


def test_structured_rejects_mixed_types_and_bad_direction():
    items = [Item(id="a", seq=1, fields={"p": "x"}), Item(id="b", seq=2, fields={"p": 3})]
    with pytest.raises(ValueError, match="'p'"):
        order_structured(items, [("p", "asc")])
    with pytest.raises(ValueError):
        order_structured(items, [("p", "up")])
