"""Relative date words in a question, read against the day the question is asked as of.

``dateparser.search.search_dates`` finds the date phrases ("yesterday", "last week", "in May",
"two weeks ago", "on 8 May, 2023") and ``DateDataParser`` says each phrase's period (day, week,
month, year); the phrase then stands for that whole period. Phrases that name no calendar word
and no year (a bare "18th", "10") are not read as dates: a question about an 18th birthday is
not about the 18th of this month. Pure: no database, and dateparser is told the language so it
never needs language detection (nothing is downloaded).

The reader's work is bounded: a word repeated back to back is read once, then only the first
``MEMORY_DATE_READ_CHARS`` characters are read (cut at a space), and a phrase found several
times is placed once, so a long or repetitive question costs what a short one does. At the calendar's
edges a period is clamped, never overflowed: one that runs past year 9999 has an open end, and
a phrase dateparser cannot place inside years 1-9999 is not read as a date.
"""
from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import lru_cache

from memseek_site.conf import memseek_setting

_CALENDAR_WORD = re.compile(
    r"\b(yesterday|today|tonight|ago|last|past|previous|this|week|weeks|weekend|month|months|year|years|day|days|"
    r"january|february|march|april|may|june|july|august|september|october|november|december|"
    r"jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b|\b\d{4}\b", re.IGNORECASE)
_LAST_DAY = datetime.max.date()
_SETTINGS = {"PREFER_DATES_FROM": "past", "RETURN_AS_TIMEZONE_AWARE": False}


@dataclass(frozen=True, slots=True)
class Window:
    """Occurred-at bounds: ``start <= occurred_at < end`` (either side open when None)."""

    start: datetime | None
    end: datetime | None  # None: the period runs past the calendar's last day
    phrases: tuple[str, ...] = ()


def question_window(question: str, reference: datetime) -> Window | None:
    """The period the question's date phrases cover, read against ``reference`` (UTC), or None
    when it names none. Several phrases give the span from the earliest start to the latest end;
    a period that has not begun by ``reference`` is dropped."""
    from dateparser.search import search_dates

    base = reference.astimezone(timezone.utc).replace(tzinfo=None)
    try:
        found = search_dates(read_part(question), languages=["en"],
                             settings={**_SETTINGS, "RELATIVE_BASE": base}) or []
    except (OverflowError, ValueError):  # a phrase past the calendar's edge: none is read
        return None
    spans, phrases = [], []
    for phrase in dict.fromkeys(phrase for phrase, _ in found):
        if not _CALENDAR_WORD.search(phrase):
            continue
        try:
            data = _parser(base).get_date_data(phrase)
        except (OverflowError, ValueError):
            continue
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
    ends = [e for _, e in spans]
    end = None if None in ends else max(ends).replace(tzinfo=utc)
    return Window(min(s for s, _ in spans).replace(tzinfo=utc), end, tuple(phrases))


def read_part(question: str) -> str:
    """The part of ``question`` the date reader reads: the question with each run of one word
    repeated back to back written once (words joined by single spaces when any run was
    shortened), then its first ``MEMORY_DATE_READ_CHARS`` characters, cut back to the last
    space when that splits a word."""
    limit = memseek_setting("MEMORY_DATE_READ_CHARS")
    words = question.split()
    kept = [word for index, word in enumerate(words) if index == 0 or word != words[index - 1]]
    if len(kept) < len(words):
        question = " ".join(kept)
    if len(question) <= limit:
        return question
    part = question[:limit]
    space = part.rfind(" ")
    return part[:space] if space > 0 and not question[limit].isspace() else part


def period_bounds(moment: datetime, period: str) -> tuple[datetime, datetime | None]:
    """``[start, end)`` of the day, ISO week (Monday first), month or year holding ``moment``,
    clamped to the calendar: a start before year 1 is its first day, and an end past year 9999
    is None (open)."""
    day = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    if period == "year":
        start, last = day.replace(month=1, day=1), day.replace(month=12, day=31)
    elif period == "month":
        start, last = day.replace(day=1), day.replace(day=calendar.monthrange(day.year, day.month)[1])
    elif period == "week":
        start = day - timedelta(days=min(day.weekday(), day.toordinal() - 1))
        last = day + timedelta(days=min(6 - day.weekday(), _LAST_DAY.toordinal() - day.toordinal()))
    else:
        start, last = day, day
    return start, (None if last.date() == _LAST_DAY else last + timedelta(days=1))


@lru_cache(maxsize=64)
def _parser(base: datetime):
    from dateparser.date import DateDataParser

    return DateDataParser(languages=["en"], settings={**_SETTINGS, "RELATIVE_BASE": base})
