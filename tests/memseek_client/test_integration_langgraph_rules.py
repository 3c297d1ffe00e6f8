"""The store's pure rules, on literal inputs: namespace ↔ entity, memory-path escaping, the text
an item is searched by, LangGraph's filter operators and namespace match conditions."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langgraph.store.base import MatchCondition

from memseek_client.integrations.langgraph_store import (entity_of, escape_segment, item_text, namespace_matches,
                                                         namespace_of, value_matches)

LABELS = st.text(st.characters(blacklist_characters=".\x00"), min_size=1, max_size=8)


@given(st.lists(LABELS, min_size=1, max_size=5).map(tuple))
def test_a_namespace_is_the_entity_its_labels_join_to_and_back(namespace):
    assert namespace_of(entity_of(namespace)) == namespace


@pytest.mark.parametrize("entity", ["", ".a", "a.", "a..b"])
def test_an_entity_with_an_empty_label_has_no_namespace(entity):
    assert namespace_of(entity) == ()


@pytest.mark.parametrize(("segment", "escaped"), [
    ("contact.maria", "contact.maria"), ("a/b", "a%2Fb"), ("100%", "100%25"), ("tab\there", "tab%09here"),
    ("del\x7f", "del%7F"), ("ümlaut ok", "ümlaut ok")])
def test_memory_path_segments_escape_percent_slash_and_control_characters(segment, escaped):
    assert escape_segment(segment) == escaped


@pytest.mark.parametrize(("value", "index", "text"), [
    ({"text": "said", "other": 1}, None, "said"),
    ({"b": 2, "a": "x"}, None, '{"a": "x", "b": 2}'),
    ({"text": 5}, None, '{"text": 5}'),
    ({"title": "T", "body": "B", "text": "t"}, ["title", "body"], "T\nB"),
    ({"title": "T"}, ["missing"], '{"title": "T"}'),
    ({"items": [{"name": "n1"}, {"name": "n2"}]}, ["items[*].name"], "n1\nn2"),
])
def test_the_text_an_item_is_searched_by(value, index, text):
    assert item_text(value, index) == text


@pytest.mark.parametrize(("conditions", "matches"), [
    ({"level": 2}, True), ({"level": 3}, False), ({"missing": 2}, False),
    ({"level": {"$gte": 2, "$lt": 3}}, True), ({"level": {"$gt": 2}}, False), ({"level": {"$ne": 2}}, False),
    ({"level": {"$lte": "x"}}, False),  # incomparable: no match, no error
    ({"tags": ["a", "b"]}, True), ({"tags": ["b", "a"]}, False),
    ({"meta": {"x": 1}}, True),  # a dict without $ operators is compared whole
])
def test_filter_conditions(conditions, matches):
    value = {"level": 2, "tags": ["a", "b"], "meta": {"x": 1}}
    assert value_matches(value, conditions) is matches


def test_an_unknown_filter_operator_is_refused():
    with pytest.raises(ValueError, match=r"unknown filter operator '\$in'"):
        value_matches({"level": 2}, {"level": {"$in": [2]}})


@pytest.mark.parametrize(("condition", "matches"), [
    (MatchCondition("prefix", ("a", "b")), True), (MatchCondition("prefix", ("a", "*", "c")), True),
    (MatchCondition("prefix", ("b",)), False), (MatchCondition("suffix", ("c",)), True),
    (MatchCondition("suffix", ("*", "c")), True), (MatchCondition("suffix", ("b",)), False),
    (MatchCondition("prefix", ("a", "b", "c", "d")), False),
])
def test_namespace_match_conditions(condition, matches):
    assert namespace_matches(("a", "b", "c"), condition) is matches
