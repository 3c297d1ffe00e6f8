"""The pure parts of POST /memory/search: question date windows (dateparser), worked-out
lines and the model filter's answer check, on literal inputs."""
from __future__ import annotations

from datetime import date, datetime, timezone

import pytest

from memseek_site.errors import ApiError
from retrieval_app.memory.brief_dates import period_bounds, question_window
from retrieval_app.memory.brief_filter import validate_filter_answer
from retrieval_app.memory.brief_worked import Dated, Folded, Statement, worked_out

AS_OF = datetime(2023, 6, 15, 12, 0, tzinfo=timezone.utc)  # a Thursday


def utc(*parts):
    return datetime(*parts, tzinfo=timezone.utc)


@pytest.mark.parametrize("question, start, end", [
    ("What did Caroline do yesterday?", utc(2023, 6, 14), utc(2023, 6, 15)),
    ("What happened last week?", utc(2023, 6, 5), utc(2023, 6, 12)),
    ("Where did Mel go in May?", utc(2023, 5, 1), utc(2023, 6, 1)),
    ("What did she buy two weeks ago?", utc(2023, 5, 29), utc(2023, 6, 5)),
    ("What did they talk about on 8 May 2023?", utc(2023, 5, 8), utc(2023, 5, 9)),
    ("What happened last year?", utc(2022, 1, 1), utc(2023, 1, 1)),
    ("What did she do 3 days ago?", utc(2023, 6, 12), utc(2023, 6, 13)),
])
def test_date_words_become_the_period_they_name(question, start, end):
    window = question_window(question, AS_OF)
    assert (window.start, window.end) == (start, end)


@pytest.mark.parametrize("question", ["What is Melanie's favorite book?", "How long ago was her 18th birthday?",
                                      "What are the plans for next week?"])
def test_no_date_words_or_a_future_period_narrow_nothing(question):
    assert question_window(question, AS_OF) is None


def test_in_may_asked_in_april_is_last_years_may():
    window = question_window("Where did Mel go in May?", utc(2023, 4, 2))
    assert (window.start, window.end) == (utc(2022, 5, 1), utc(2022, 6, 1))


def test_period_bounds():
    moment = datetime(2024, 2, 29, 15)
    assert period_bounds(moment, "day") == (datetime(2024, 2, 29), datetime(2024, 3, 1))
    assert period_bounds(moment, "week") == (datetime(2024, 2, 26), datetime(2024, 3, 4))
    assert period_bounds(moment, "month") == (datetime(2024, 2, 1), datetime(2024, 3, 1))
    assert period_bounds(moment, "year") == (datetime(2024, 1, 1), datetime(2025, 1, 1))


A, B, C = Dated("a", date(2023, 5, 8)), Dated("b", date(2023, 5, 8)), Dated("c", date(2023, 7, 1))


def test_the_time_between_the_first_two_records_of_different_days():
    [line] = worked_out("How long between the trip and the move?", facts=[A], passages=[B, C], counted=None,
                        known=[], as_of=date(2023, 8, 1))
    assert line == {"kind": "interval", "days": 54, "line": "54 days (about 8 weeks) between 2023-05-08 and "
                    "2023-07-01", "ids": ["a", "c"]}


def test_how_long_ago_is_measured_to_the_as_of_day():
    [line] = worked_out("How long ago did she move?", facts=[], passages=[A], counted=None, known=[],
                        as_of=date(2025, 5, 8))
    assert line["days"] == 731 and line["ids"] == ["a"] and "about 2.0 years" in line["line"]


def test_a_count_counts_distinct_records_only_when_something_is_countable():
    assert worked_out("How many pets?", facts=[], passages=[A], counted=None, known=[], as_of=date(2023, 8, 1)) == []
    [line] = worked_out("How many pets?", facts=[], passages=[], counted=[A, B, A], known=[], as_of=date(2023, 8, 1))
    assert (line["kind"], line["value"], line["ids"]) == ("count", 2, ["a", "b"])


def test_a_conflict_needs_two_distinct_values_and_a_needed_record():
    folded = Folded("maria", "city", (Statement("a", "Porto", date(2023, 6, 1)), Statement("b", "Lisbon",
                                                                                          date(2023, 3, 1))))
    same = Folded("maria", "pet", (Statement("c", "a cat", date(2023, 6, 1)), Statement("d", "a cat",
                                                                                       date(2023, 3, 1))))
    lines = worked_out("Where?", facts=[Dated("b", date(2023, 3, 1)), Dated("c", date(2023, 6, 1))], passages=[],
                       counted=None, known=[folded, same], as_of=date(2023, 8, 1))
    assert lines == [{"kind": "conflict", "ids": ["a", "b"], "line": "maria city: current statements conflict: "
                      "'Porto' (said 2023-06-01); 'Lisbon' (said 2023-03-01)"}]
    assert worked_out("Where?", facts=[], passages=[], counted=None, known=[folded], as_of=date(2023, 8, 1)) == []


def test_a_filter_answer_keeps_references_in_rank_order():
    assert validate_filter_answer({"keep": ["p3", "p1"], "held": True}, 3) == (0, 2)
    assert validate_filter_answer({"keep": [], "held": False}, 3) == ()


@pytest.mark.parametrize("answer", [{"keep": []}, {"keep": [], "held": 1}, {"keep": ["p0"], "held": True},
                                    {"keep": ["p4"], "held": True}, {"keep": ["P1"], "held": True},
                                    {"keep": None, "held": True}])
def test_a_filter_answer_that_breaks_the_contract_is_refused(answer):
    with pytest.raises(ApiError) as caught:
        validate_filter_answer(answer, 3)
    assert caught.value.code == "memory_filter_invalid" and caught.value.status == 503
