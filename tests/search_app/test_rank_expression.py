"""Rank expressions: parsing tables, mode validation, JSON round trip, grammar and evaluation."""
import copy
import math
from datetime import datetime, timedelta, timezone

import jsonschema
import pytest

from search_app.engine.rank_evaluate import RankEvaluationError, Signals, evaluate_rank
from search_app.engine.rank_expression import (
    MAX_NODES, SHIPPED_DEFAULT_VARIANTS, AgeHours, Bm25, Const, Decay, Max, Normalize, Product, RankError, Saturate,
    Score, Similarity, Sum, TextMatch, parse_rank, rank_depth, rank_node_count, rank_signals, rank_to_json,
    validate_rank,
)
from search_app.engine.rank_grammar import RANK_GRAMMAR

NOW = datetime(2026, 7, 1, 12, 0, tzinfo=timezone.utc)
HYBRID_DEFAULT = ["sum", [["product", 1.0, ["normalize", ["max", [["similarity"], ["text_match"]]]]],
                          ["product", 1.0, ["decay", ["age_hours", "last_accessed"], {"midpoint": 24, "exponent": 1}]]]]
TEXT_DEFAULT = ["sum", [["product", 1.0, ["normalize", ["text_match"]]],
                        ["product", 1.0, ["decay", ["age_hours", "last_accessed"], {"midpoint": 24, "exponent": 1}]]]]


def evaluate(raw, candidates):
    return evaluate_rank(parse_rank(raw), candidates, NOW)


def ago(hours):
    return NOW - timedelta(hours=hours)


# --- parsing ----------------------------------------------------------------------------------

def test_spec_text_default_parses_into_the_expected_tree():
    assert parse_rank(TEXT_DEFAULT) == Sum((
        Product(1.0, Normalize(TextMatch())),
        Product(1.0, Decay(AgeHours("last_accessed"), midpoint=24.0, exponent=1.0)),
    ))


def test_every_operator_parses():
    raw = ["sum", [["similarity"], ["text_match"], ["bm25"], ["score", "importance"], ["age_hours", "created_at"],
                   ["const", -2], ["max", [["const", 1]]], ["saturate", ["const", 1], {"midpoint": 5, "exponent": 2}]]]
    assert parse_rank(raw) == Sum((Similarity(), TextMatch(), Bm25(), Score("importance"), AgeHours("created_at"),
                                   Const(-2.0), Max((Const(1.0),)), Saturate(Const(1.0), 5.0, 2.0)))


def test_hybrid_default_uses_exactly_five_levels_and_is_accepted():
    node = parse_rank(HYBRID_DEFAULT)
    assert rank_depth(node) == 5
    assert rank_node_count(node) == 9


def test_one_level_deeper_than_the_hybrid_default_is_rejected():
    deeper = copy.deepcopy(HYBRID_DEFAULT)
    deeper[1][0][2][1][1][0] = ["normalize", ["similarity"]]  # max's first child gains a level
    with pytest.raises(RankError) as caught:
        parse_rank(deeper)
    assert caught.value.path == "rank[1][0][2][1][1][0][1]"


def test_sixteen_nodes_pass_and_seventeen_fail():
    assert rank_node_count(parse_rank(["sum", [["const", i] for i in range(MAX_NODES - 1)]])) == 16
    with pytest.raises(RankError) as caught:
        parse_rank(["sum", [["const", i] for i in range(MAX_NODES)]])
    assert caught.value.path == "rank"
    assert "more than 16 nodes" in caught.value.message


def test_shipped_defaults_parse_and_round_trip():
    for raw in SHIPPED_DEFAULT_VARIANTS.values():
        node = parse_rank(raw)
        assert rank_to_json(node) == raw
        assert parse_rank(rank_to_json(node)) == node


def test_numbers_written_differently_give_equal_trees_and_json():
    a = parse_rank(["product", 1, ["decay", ["age_hours", "occurred_at"], {"exponent": 1, "midpoint": 168}]])
    b = parse_rank(["product", 1.0, ["decay", ["age_hours", "occurred_at"], {"midpoint": 168.0, "exponent": 1.0}]])
    assert a == b and hash(a) == hash(b)
    assert rank_to_json(a) == rank_to_json(b) == \
        ["product", 1.0, ["decay", ["age_hours", "occurred_at"], {"midpoint": 168.0, "exponent": 1.0}]]


def test_custom_error_path_prefix():
    with pytest.raises(RankError) as caught:
        parse_rank(["sum", [["const", 1], ["nope"]]], "sources[1].rank")
    assert caught.value.path == "sources[1].rank[1][1][0]"


@pytest.mark.parametrize("raw, path, fragment", [
    ("similarity", "rank", "must be a list"),
    ([], "rank", "must not be empty"),
    ([3], "rank[0]", "operator must be a string"),
    (["cosine"], "rank[0]", "unknown operator 'cosine'"),
    (["sum", [["const", 1], ["product", 1.0, ["boost"]]]], "rank[1][1][2][0]", "unknown operator"),
    (["similarity", 1], "rank", "takes 0 argument"),
    (["sum", ["const", 1], ["const", 2]], "rank", "takes 1 argument"),
    (["sum", []], "rank[1]", "non-empty list"),
    (["max", ["const", 1]], "rank[1][0]", "must be a list"),
    (["score", ""], "rank[1]", "non-blank string"),
    (["score", 3], "rank[1]", "non-blank string"),
    (["age_hours", "updated_at"], "rank[1]", "age_hours reads one of"),
    (["const", "1"], "rank[1]", "expected a number"),
    (["const", True], "rank[1]", "expected a number"),
    (["const", float("inf")], "rank[1]", "finite"),
    (["const", float("nan")], "rank[1]", "finite"),
    (["const", 10 ** 400], "rank[1]", "finite"),
    (["product", None, ["const", 1]], "rank[1]", "expected a number"),
    (["product", float("-inf"), ["const", 1]], "rank[1]", "finite"),
    (["normalize", ["similarity"], ["text_match"]], "rank", "takes 1 argument"),
    (["decay", ["age_hours", "occurred_at"]], "rank", "takes 2 argument"),
    (["decay", ["age_hours", "occurred_at"], [24, 1]], "rank[2]", "options must be an object"),
    (["decay", ["age_hours", "occurred_at"], {"midpoint": 24, "exponent": 1, "floor": 0}], "rank[2].floor",
     "unknown option"),
    (["decay", ["age_hours", "occurred_at"], {"midpoint": 24}], "rank[2].exponent", "is required"),
    (["saturate", ["score", "x"], {"exponent": 1}], "rank[2].midpoint", "is required"),
    (["decay", ["age_hours", "occurred_at"], {"midpoint": 0, "exponent": 1}], "rank[2].midpoint", "greater than 0"),
    (["saturate", ["score", "x"], {"midpoint": 5, "exponent": -1}], "rank[2].exponent", "greater than 0"),
    (["saturate", ["score", "x"], {"midpoint": "5", "exponent": 1}], "rank[2].midpoint", "expected a number"),
    (["sum", [["product", 1.0, ["normalize", ["max", [["normalize", ["similarity"]]]]]]]], "rank[1][0][2][1][1][0][1]",
     "deeper than 5 levels"),
])
def test_parse_rejections_name_the_path(raw, path, fragment):
    with pytest.raises(RankError) as caught:
        parse_rank(raw)
    assert caught.value.path == path
    assert fragment in caught.value.message
    assert caught.value.code == "request_schema"


# --- validation against the search ------------------------------------------------------------

@pytest.mark.parametrize("raw, mode, post_fusion, path, fragment", [
    (["similarity"], "text", False, "rank", "similarity is available only in vector and hybrid"),
    (["sum", [["const", 1], ["text_match"]]], "vector", False, "rank[1][1]", "text_match is available only in text"),
    (["bm25"], "vector", False, "rank", "bm25 is available only in text and hybrid"),
    (["similarity"], "recent", False, "rank", "vector and hybrid"),
    (["score", "importanse"], "text", False, "rank[1]", "unknown score 'importanse'"),
    (["product", 2.0, ["similarity"]], None, True, "rank[2]", "post-fusion boost"),
    (["text_match"], "hybrid", True, "rank", "post-fusion boost"),
    (["bm25"], "hybrid", True, "rank", "post-fusion boost"),
    (["const", 1], "structured", False, "rank", "rank is not allowed"),
])
def test_validation_rejections(raw, mode, post_fusion, path, fragment):
    with pytest.raises(RankError) as caught:
        validate_rank(parse_rank(raw), mode=mode, score_names={"importance"}, post_fusion=post_fusion)
    assert caught.value.path == path
    assert fragment in caught.value.message


@pytest.mark.parametrize("raw, mode", [
    (["similarity"], "vector"), (["similarity"], "hybrid"), (["text_match"], "text"), (["text_match"], "hybrid"),
    (["bm25"], "text"), (["bm25"], "hybrid"), (["score", "importance"], "recent"),
    (["decay", ["age_hours", "occurred_at"], {"midpoint": 24, "exponent": 1}], "recent"),
])
def test_validation_accepts_signals_in_their_modes(raw, mode):
    validate_rank(parse_rank(raw), mode=mode, score_names={"importance"})


def test_post_fusion_boost_may_use_scores_age_constants_and_shapers():
    boost = ["sum", [["const", 1], ["saturate", ["score", "importance"], {"midpoint": 5, "exponent": 1}],
                     ["decay", ["age_hours", "created_at"], {"midpoint": 24, "exponent": 1}]]]
    validate_rank(parse_rank(boost), mode=None, score_names={"importance"}, post_fusion=True)


def test_shipped_defaults_validate_in_their_own_mode():
    for mode, raw in SHIPPED_DEFAULT_VARIANTS.items():
        validate_rank(parse_rank(raw), mode=mode, score_names=())


def test_unknown_mode_is_a_programming_error():
    with pytest.raises(ValueError):
        validate_rank(Const(1.0), mode="lexical", score_names=())


def test_rank_signals_lists_what_the_tree_reads():
    assert rank_signals(parse_rank(HYBRID_DEFAULT)) == {"similarity", "text_match", "age_hours"}


# --- grammar ----------------------------------------------------------------------------------

def test_grammar_is_a_valid_json_schema_that_accepts_the_defaults():
    jsonschema.Draft202012Validator.check_schema(RANK_GRAMMAR)
    validator = jsonschema.Draft202012Validator(RANK_GRAMMAR)
    for raw in SHIPPED_DEFAULT_VARIANTS.values():
        validator.validate(raw)
    assert not validator.is_valid(["decay", ["age_hours", "occurred_at"], {"midpoint": 0, "exponent": 1}])
    assert not validator.is_valid(["cosine"])
    assert RANK_GRAMMAR["x-limits"]["max_depth"] == 5 and RANK_GRAMMAR["x-limits"]["max_nodes"] == 16


# --- evaluation -------------------------------------------------------------------------------

def test_missing_signals_are_zero():
    empty = Signals()
    for raw in (["similarity"], ["text_match"], ["bm25"], ["score", "importance"], ["age_hours", "last_accessed"]):
        assert evaluate(raw, [empty]) == [0.0]


def test_nan_stored_score_and_nan_signal_are_zero():
    assert evaluate(["score", "importance"], [Signals(scores={"importance": float("nan")})]) == [0.0]
    assert evaluate(["similarity"], [Signals(similarity=float("nan"))]) == [0.0]
    assert evaluate(["score", "flag"], [Signals(scores={"flag": "yes"})]) == [0.0]


def test_signals_read_the_record():
    row = Signals(similarity=0.8, text_match=0.3, bm25=4.5, scores={"importance": 7},
                  created_at=ago(48), occurred_at=ago(12), last_accessed=ago(1.5))
    assert evaluate(["similarity"], [row]) == [0.8]
    assert evaluate(["text_match"], [row]) == [0.3]
    assert evaluate(["bm25"], [row]) == [4.5]
    assert evaluate(["score", "importance"], [row]) == [7.0]
    assert evaluate(["age_hours", "created_at"], [row]) == [48.0]
    assert evaluate(["age_hours", "occurred_at"], [row]) == [12.0]
    assert evaluate(["age_hours", "last_accessed"], [row]) == [1.5]


def test_future_timestamp_is_age_zero():
    assert evaluate(["age_hours", "occurred_at"], [Signals(occurred_at=NOW + timedelta(days=3))]) == [0.0]


def test_const_sum_max_product_are_arithmetic():
    rows = [Signals(scores={"a": 2, "b": 5}), Signals(scores={"a": 9, "b": -1})]
    assert evaluate(["const", 2.5], rows) == [2.5, 2.5]
    assert evaluate(["sum", [["score", "a"], ["score", "b"], ["const", 1]]], rows) == [8.0, 9.0]
    assert evaluate(["max", [["score", "a"], ["score", "b"]]], rows) == [5.0, 9.0]
    assert evaluate(["product", -0.5, ["score", "a"]], rows) == [-1.0, -4.5]


def test_decay_passes_half_at_the_midpoint_and_is_one_at_age_zero():
    rows = [Signals(last_accessed=ago(24)), Signals(last_accessed=NOW)]
    assert evaluate(["decay", ["age_hours", "last_accessed"], {"midpoint": 24, "exponent": 1}], rows) == [0.5, 1.0]


def test_saturate_passes_half_at_the_midpoint_and_is_zero_at_zero():
    rows = [Signals(scores={"x": 5}), Signals(scores={"x": 0})]
    assert evaluate(["saturate", ["score", "x"], {"midpoint": 5, "exponent": 1}], rows) == [0.5, 0.0]


def test_saturate_and_decay_follow_their_formulas_with_exponents():
    rows = [Signals(scores={"x": 10})]
    assert evaluate(["saturate", ["score", "x"], {"midpoint": 5, "exponent": 2}], rows) == \
        [pytest.approx(100 / (100 + 25))]
    assert evaluate(["decay", ["score", "x"], {"midpoint": 5, "exponent": 2}], rows) == [pytest.approx(1 / (1 + 4))]


def test_negative_inputs_are_clamped_before_saturate_and_decay():
    rows = [Signals(scores={"x": -3})]
    assert evaluate(["saturate", ["score", "x"], {"midpoint": 5, "exponent": 1}], rows) == [0.0]
    assert evaluate(["decay", ["score", "x"], {"midpoint": 5, "exponent": 1}], rows) == [1.0]
    assert evaluate(["saturate", ["score", "x"], {"midpoint": 5, "exponent": 0.5}], rows) == [0.0]


def test_extreme_shaper_inputs_stay_finite():
    rows = [Signals(scores={"x": 1e300}), Signals(scores={"x": 1e-300})]
    assert evaluate(["saturate", ["score", "x"], {"midpoint": 1, "exponent": 3}], rows) == [1.0, 0.0]
    assert evaluate(["decay", ["score", "x"], {"midpoint": 1, "exponent": 3}], rows) == [0.0, 1.0]


def test_normalize_is_min_max_over_all_candidates():
    rows = [Signals(scores={"x": v}) for v in (2, 6, 10)]
    assert evaluate(["normalize", ["score", "x"]], rows) == [0.0, 0.5, 1.0]


def test_normalize_all_equal_is_zero():
    rows = [Signals(scores={"x": 7}), Signals(scores={"x": 7})]
    assert evaluate(["normalize", ["score", "x"]], rows) == [0.0, 0.0]


def test_empty_candidate_set_evaluates_to_empty():
    assert evaluate(["normalize", ["score", "x"]], []) == []


def test_text_default_over_candidates():
    rows = [Signals(text_match=0.2, last_accessed=NOW), Signals(text_match=0.6, last_accessed=ago(24)),
            Signals(text_match=None, last_accessed=ago(72))]
    assert evaluate(TEXT_DEFAULT, rows) == [pytest.approx(1 / 3 + 1.0), pytest.approx(1.0 + 0.5),
                                            pytest.approx(0.0 + 0.25)]


def test_non_finite_results_raise_rank_evaluation():
    huge = [Signals(scores={"x": 1e308})]
    with pytest.raises(RankEvaluationError) as caught:
        evaluate(["sum", [["const", 1], ["product", 10.0, ["score", "x"]]]], huge)
    assert caught.value.code == "rank_evaluation"
    assert caught.value.path == "rank[1][1]"
    with pytest.raises(RankEvaluationError) as caught:
        evaluate(["sum", [["score", "x"], ["score", "x"]]], huge)
    assert caught.value.path == "rank"
    with pytest.raises(RankEvaluationError):
        evaluate(["score", "x"], [Signals(scores={"x": math.inf})])


def test_naive_now_is_rejected():
    with pytest.raises(ValueError):
        evaluate_rank(Const(1.0), [Signals()], datetime(2026, 7, 1))
