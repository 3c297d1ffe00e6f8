"""Relative date words in a question, read against the day the question is asked as of.

``dateparser.search.search_dates`` finds the date phrases ("yesterday", "last week", "in May",
"two weeks ago", "on 8 May, 2023") and ``DateDataParser`` says each phrase's period (day, week,
month, year); the phrase then stands for that whole period. Phrases that name no calendar word
and no year (a bare "18th", "10") are not read as dates: a question about an 18th birthday is
not about the 18th of this month. Pure: no database, and dateparser is told the language so it
never needs language detection (nothing is downloaded).
"""
from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import lru_cache

_CALENDAR_WORD = re.compile(
    r"\b(yesterday|today|tonight|ago|last|past|previous|this|week|weeks|weekend|month|months|year|years|day|days|"
    r"january|february|march|april|may|june|july|august|september|october|november|december|"
    r"jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b|\b\d{4}\b", re.IGNORECASE)
_SETTINGS = {"PREFER_DATES_FROM": "past", "RETURN_AS_TIMEZONE_AWARE": False}


@dataclass(frozen=True, slots=True)
class Window:
    """Occurred-at bounds: ``start <= occurred_at < end`` (either side open when None)."""

    start: datetime | None
    end: datetime | None
    phrases: tuple[str, ...] = ()


def question_window(question: str, reference: datetime) -> Window | None:
    """The period the question's date phrases cover, read against ``reference`` (UTC), or None
    when it names none. Several phrases give the span from the earliest start to the latest end;
    a period that has not begun by ``reference`` is dropped."""
    from dateparser.search import search_dates

    base = reference.astimezone(timezone.utc).replace(tzinfo=None)
    found = search_dates(question, languages=["en"], settings={**_SETTINGS, "RELATIVE_BASE": base}) or []
    spans, phrases = [], []
    for phrase, _ in found:
        if not _CALENDAR_WORD.search(phrase):
            continue
        data = _parser(base).get_date_data(phrase)
        if data is None or data.date_obj is None:
            continue
        start, end = period_bounds(data.date_obj, data.period or "day")
        if start > base:
            continue
        spans.append((start, end))
        phrases.append(phrase.strip())
    if not spans:
        return None
    utc = timezone.utc
    return Window(min(s for s, _ in spans).replace(tzinfo=utc), max(e for _, e in spans).replace(tzinfo=utc),
                  tuple(phrases))


def period_bounds(moment: datetime, period: str) -> tuple[datetime, datetime]:
    """``[start, end)`` of the day, ISO week (Monday first), month or year holding ``moment``."""
    day = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    if period == "year":
        return day.replace(month=1, day=1), day.replace(year=day.year + 1, month=1, day=1)
    if period == "month":
        last = calendar.monthrange(day.year, day.month)[1]
        return day.replace(day=1), day.replace(day=last) + timedelta(days=1)
    if period == "week":
        start = day - timedelta(days=day.weekday())
        return start, start + timedelta(days=7)
    return day, day + timedelta(days=1)


@lru_cache(maxsize=64)
def _parser(base: datetime):
    from dateparser.date import DateDataParser

    return DateDataParser(languages=["en"], settings={**_SETTINGS, "RELATIVE_BASE": base})
