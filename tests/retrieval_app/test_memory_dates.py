"""The memory routes' ``before``/``after`` bounds: a day or a zoned ISO time, half-open windows."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from memseek_site.errors import ApiError
from retrieval_app.memory.dates import DateWindow, parse_window

UTC = timezone.utc


def test_day_bounds_cover_whole_days():
    window = parse_window("2023-05-01", "2023-05-01")
    assert window == DateWindow(datetime(2023, 5, 1, tzinfo=UTC), datetime(2023, 5, 2, tzinfo=UTC))
    assert window.contains(datetime(2023, 5, 1, 23, 59, 59, 999999, tzinfo=UTC))
    assert not window.contains(datetime(2023, 5, 2, tzinfo=UTC))
    assert not window.contains(datetime(2023, 4, 30, 23, 59, tzinfo=UTC))


def test_time_bounds_are_inclusive_of_the_named_instant():
    window = parse_window("2023-05-01T10:00:00+02:00", "2023-05-01T09:00:00Z")
    assert window.contains(datetime(2023, 5, 1, 8, tzinfo=UTC))
    assert window.contains(datetime(2023, 5, 1, 9, tzinfo=UTC))
    assert not window.contains(datetime(2023, 5, 1, 9, 0, 0, 1, tzinfo=UTC))
    assert window.end - window.start == timedelta(hours=1, microseconds=1)


def test_open_sides():
    assert parse_window(None, None) == DateWindow() and not DateWindow().bounded
    assert parse_window("2023-05-01", None).end is None


@pytest.mark.parametrize(("after", "before", "code", "path"), [
    ("2023-05-02", "2023-05-01", "date_order", "after"),
    ("2023-05-01T10:00:00Z", "2023-05-01T09:59:59Z", "date_order", "after"),
    ("2023-5-1", None, "request_schema", "after"),
    ("2023-02-30", None, "request_schema", "after"),
    (None, "2023-05-01T10:00:00", "request_schema", "before"),
    (None, "yesterday", "request_schema", "before"),
    (None, "20230501", "request_schema", "before"),
    (None, "9999-12-31", "request_schema", "before"),
    (None, "9999-12-31T23:59:59-14:00", "datetime_out_of_range", "before"),
    (20230501, None, "request_schema", "after"),
    (None, "", "request_schema", "before"),
])
def test_bad_bounds(after, before, code, path):
    with pytest.raises(ApiError) as raised:
        parse_window(after, before)
    assert (raised.value.code, raised.value.path) == (code, path)
