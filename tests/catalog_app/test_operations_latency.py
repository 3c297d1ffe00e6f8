"""The latency buckets of the Operations page: the percentile read from bucket counts equals the
bucket of the nearest-rank percentile of the raw durations (the simple oracle, kept here)."""
import math

import pytest
from hypothesis import given, strategies as st

from catalog_app.operations.latency import (
    BOUNDS_MS, BUCKETS, add_counts, bucket_of, format_ms, percentile_bound_ms,
)


def oracle_bound_ms(durations_s: list[float], q: float) -> float | None:
    """Sort, take the nearest-rank value, name the first bound at or above it."""
    if not durations_s:
        return None
    ordered = sorted(durations_s)
    value_ms = ordered[max(1, math.ceil(q * len(ordered))) - 1] * 1000
    return next((bound for bound in BOUNDS_MS if value_ms <= bound), math.inf)


def histogram(durations_s: list[float]) -> list[int]:
    counts = [0] * BUCKETS
    for seconds in durations_s:
        counts[bucket_of(seconds)] += 1
    return counts


@pytest.mark.parametrize(("seconds", "bucket"), [
    (0.0, 0), (0.0005, 0), (0.001, 0), (0.0010001, 1), (BOUNDS_MS[1] / 1000, 1), (0.002, 4), (0.0021, 5),
    (BOUNDS_MS[-1] / 1000, BUCKETS - 2), (BOUNDS_MS[-1] / 1000 + 0.001, BUCKETS - 1), (3600.0, BUCKETS - 1),
])
def test_a_duration_falls_in_the_bucket_whose_upper_bound_is_the_first_at_or_above_it(seconds, bucket):
    assert bucket_of(seconds) == bucket


def test_bounds_grow_by_a_quarter_doubling_from_one_millisecond():
    assert BOUNDS_MS[0] == 1 and BOUNDS_MS[4] == 2 and BOUNDS_MS[40] == 1024
    assert all(later / earlier < 1.19 for earlier, later in zip(BOUNDS_MS, BOUNDS_MS[1:]))


durations = st.lists(st.floats(min_value=0, max_value=120, allow_nan=False), max_size=300)
quantiles = st.sampled_from([0.5, 0.95]) | st.floats(min_value=0.001, max_value=1)


@given(durations, quantiles)
def test_the_bucket_percentile_equals_the_sorted_oracle(values, q):
    assert percentile_bound_ms(histogram(values), q) == oracle_bound_ms(values, q)


@given(durations, durations, quantiles)
def test_histograms_of_two_processes_add_up_to_the_histogram_of_all(first, second, q):
    merged = add_counts(histogram(first), histogram(second))
    assert merged == histogram(first + second)
    assert percentile_bound_ms(merged, q) == oracle_bound_ms(first + second, q)


@given(st.floats(min_value=0.000001, max_value=50, allow_nan=False))
def test_the_bound_is_at_most_19_percent_above_the_true_value(seconds):
    bound = percentile_bound_ms(histogram([seconds]), 0.5)
    assert seconds * 1000 <= bound <= max(1.0, seconds * 1000 * 2 ** 0.25)


@pytest.mark.parametrize(("value", "shown"), [
    (None, "—"), (1.0, "1.0 ms"), (9.51, "9.5 ms"), (45.25, "45 ms"), (1448.15, "1.45 s"), (math.inf, "> 55 s"),
])
def test_format_ms(value, shown):
    assert format_ms(value) == shown
