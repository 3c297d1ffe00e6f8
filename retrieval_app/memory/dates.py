"""The date bounds ``before`` and ``after`` of the memory routes, read one way everywhere.

Each bound is ``YYYY-MM-DD`` (a UTC day) or a full ISO 8601 time with a zone. ``after`` keeps
memory from that instant on (a day: from its first instant); ``before`` asks as of that instant
(a day: as of its end, so the whole day counts). The window is half-open, ``start <= occurred_at
< end``, so a day bound and a time bound compose without gaps; a window that holds no instant
(``after`` later than ``before``) is ``date_order`` at ``after``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone

from memseek_site.errors import RequestError
from memseek_site.parsing import parse_datetime, type_name

DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_FORMS = "YYYY-MM-DD or a full ISO 8601 time with a zone (2024-05-01T09:30:00Z)"


@dataclass(frozen=True, slots=True)
class DateWindow:
    start: datetime | None = None  # inclusive
    end: datetime | None = None  # exclusive


def parse_window(after, before, *, after_field: str = "after", before_field: str = "before") -> DateWindow:
    """The window of the raw bounds (``None``: that side is open). Raises ``RequestError``:
    ``request_schema`` for a malformed bound, ``date_order`` when ``after`` is past ``before``."""
    start = _instant(after, after_field, end_of_day=False) if after is not None else None
    end = _instant(before, before_field, end_of_day=True) if before is not None else None
    if start is not None and end is not None and start >= end:
        raise RequestError("date_order", f"{after!r} is later than before {before!r}; after must not be past "
                           "before", after_field)
    return DateWindow(start, end)


def _instant(raw, field: str, *, end_of_day: bool) -> datetime:
    if not isinstance(raw, str):
        raise RequestError("request_schema", f"expected {_FORMS}, got {type_name(raw)}", field)
    if DAY.fullmatch(raw):
        try:
            day = date.fromisoformat(raw)
        except ValueError:
            raise RequestError("request_schema", f"{raw!r} is not a calendar day", field) from None
        instant = datetime.combine(day, time(), tzinfo=timezone.utc)
        return _shifted(instant, timedelta(days=1), raw, field) if end_of_day else instant
    if "T" not in raw.upper():
        raise RequestError("request_schema", f"{raw!r} is neither of {_FORMS}", field)
    instant = parse_datetime(raw, field)
    try:
        instant.astimezone(timezone.utc)
    except OverflowError:
        raise RequestError("datetime_out_of_range", f"{raw!r} is outside years 1-9999 in UTC", field) from None
    # As of a time: that instant still counts (the column's resolution is a microsecond).
    return _shifted(instant, timedelta(microseconds=1), raw, field) if end_of_day else instant


def _shifted(instant: datetime, step: timedelta, raw: str, field: str) -> datetime:
    try:
        return instant + step
    except OverflowError:
        raise RequestError("request_schema", f"{raw!r} is past the last representable day", field) from None
