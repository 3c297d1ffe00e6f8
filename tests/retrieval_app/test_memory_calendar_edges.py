"""Dates at the calendar's edges (years 1 and 9999) in POST /memory/search, in its body and in
its question: clamped, or refused with a 4xx naming the field, never an overflow (a 500)."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from retrieval_app.memory.brief_dates import period_bounds, question_window, read_part
from tests.retrieval_app.test_memory_search import ids  # noqa: F401  (the fixture)

Q = "Where does Maria live?"
EDGE_BODIES = [
    {"after": "0001-01-01"}, {"before": "0001-01-01"}, {"after": "0001-01-01T00:00:00Z"},
    {"before": "0001-01-01T00:00:00Z"}, {"after": "9999-12-31T23:59:59Z"}, {"before": "9999-12-31T23:59:59Z"},
    {"after": "9999-12-31"}, {"before": "9999-12-31"}, {"after": "0001-01-01", "before": "9999-12-31T23:59:59Z"},
]
EDGE_QUESTIONS = [
    "what happened on 31 December 9999", "what happened on 1 January 0001", "what happened in 9999",
    "what happened on 9999-12-31", "what happened on 0001-01-01", "what happened in December 9999",
    "a year before 0001-01-01", "the week of 31 December 9999", "after 9999", "before 0001",
    "the day after 31 December 9999", "in the week of 1 January 0001",
]


@pytest.mark.parametrize("bounds", EDGE_BODIES, ids=str)
def test_body_bounds_at_the_edges_are_answered_or_refused_at_their_field(api, ids, bounds):
    response = api.post("/memory/search", {"query": Q, "entity": "maria", **bounds}, format="json")
    assert response.status_code in (200, 422), response.content
    if response.status_code == 422:
        assert response.json()["path"] in bounds
    else:
        assert response.json()["query"] == Q


def test_from_the_first_day_on_keeps_everything(api, ids):
    everything = api.post("/memory/search", {"query": Q, "entity": "maria"}, format="json").json()
    bounded = api.post("/memory/search", {"query": Q, "entity": "maria", "after": "0001-01-01"}, format="json").json()
    assert [hit["id"] for hit in bounded["hits"]] == [hit["id"] for hit in everything["hits"]]


@pytest.mark.parametrize("question", EDGE_QUESTIONS)
def test_questions_naming_edge_dates_are_answered(api, ids, question):
    response = api.post("/memory/search", {"query": question, "entity": "maria"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["query"] == question


@pytest.mark.parametrize("moment, period, expected", [
    (datetime(9999, 12, 31), "day", (datetime(9999, 12, 31), None)),
    (datetime(9999, 12, 15), "month", (datetime(9999, 12, 1), None)),
    (datetime(9999, 6, 1), "year", (datetime(9999, 1, 1), None)),
    (datetime(9999, 12, 31), "week", (datetime(9999, 12, 27), None)),  # a Monday
    (datetime(1, 1, 1), "week", (datetime(1, 1, 1), datetime(1, 1, 8))),  # 0001-01-01 is a Monday
    (datetime(1, 1, 3), "week", (datetime(1, 1, 1), datetime(1, 1, 8))),
    (datetime(1, 1, 1), "year", (datetime(1, 1, 1), datetime(2, 1, 1))),
    (datetime(2024, 2, 10), "month", (datetime(2024, 2, 1), datetime(2024, 3, 1))),
    (datetime(2024, 5, 8), "week", (datetime(2024, 5, 6), datetime(2024, 5, 13))),
    (datetime(2024, 12, 31, 13), "day", (datetime(2024, 12, 31), datetime(2025, 1, 1))),
])
def test_periods_are_clamped_to_the_calendar(moment, period, expected):
    assert period_bounds(moment, period) == expected


def test_a_question_read_as_of_the_last_day_ends_open():
    window = question_window("what happened in December 9999", datetime(9999, 12, 31, 12, tzinfo=timezone.utc))
    assert window is not None and window.end is None
    assert window.start == datetime(9999, 12, 1, tzinfo=timezone.utc)


def test_the_date_reader_reads_a_bounded_prefix_cut_at_a_space(settings):
    settings.MEMSEEK = {"MEMORY_DATE_READ_CHARS": 12}
    assert read_part("short") == "short"
    assert read_part("in May 2023 we moved") == "in May 2023"
    assert read_part("in May 202345 we moved") == "in May"
    assert read_part("x" * 30) == "x" * 12
    assert read_part("may may  may\n2023 2023 may") == "may 2023 may"  # back-to-back repeats once
    reference = datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert question_window("in May 2023 and in June 2024", reference).end == datetime(2023, 6, 1, tzinfo=timezone.utc)
