"""Public scores and result ordering.

Invariants this module keeps (spec "How to read score", "Ordering and ties"):

* The public ``score`` is a min-max projection of the internal value onto [0, 1] using bounds
  taken from the whole ranked pool, not from the returned page: the top of the pool is 1, and a
  pool where everything ties is all 1.
* Scored results are ordered by value descending, then ``occurred_at`` descending, then ``seq``
  (ingestion order) descending, then record id ascending. Tie-breakers change rank only, never a
  value or a score.
* Structured results follow ``order_by`` field by field, each in its own direction, with missing
  values last in both directions, then ``seq`` ascending, then record id ascending.

Every ordering is total and deterministic. Pure Python: no Django imports.
"""
from __future__ import annotations

import functools
import math
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any
from datetime import datetime, timedelta, timezone


def score_bounds(values: Iterable[float]) -> tuple[float, float]:
    """``(low, high)`` of a ranked pool. Raises ``ValueError`` for an empty pool or a non-finite value."""
    values = list(values)
    if not values:
        raise ValueError("an empty pool has no score bounds")
    for value in values:
        if not math.isfinite(value):
            raise ValueError(f"ranking values must be finite, got {value}")
    return min(values), max(values)


def public_scores(values: Iterable[float], low: float, high: float) -> list[float]:
    """Project internal values onto the public 0-1 scale.

    ``low``/``high`` are the bounds of the whole ranked pool (``score_bounds``), which may be
    wider than ``values`` (the page that is returned). Returns ``1.0`` for every value when
    ``high == low``, else ``(u - low) / (high - low)``; an empty ``values`` gives ``[]``.
    Raises ``ValueError`` for a non-finite bound, ``low > high``, or a value that is NaN or
    outside ``[low, high]``.
    """
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(f"score bounds must be finite, got low={low} high={high}")
    if low > high:
        raise ValueError(f"score bounds are reversed: low={low} > high={high}")
    scores = []
    for value in values:
        if not low <= value <= high:  # also rejects NaN
            raise ValueError(f"value {value} lies outside the pool bounds [{low}, {high}]")
        scores.append(1.0 if high == low else min(1.0, (value - low) / (high - low)))
    return scores


@functools.total_ordering
class Descending:
    """Sort-key wrapper that reverses the order of the wrapped value (equal stays equal)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return isinstance(other, Descending) and self.value == other.value

    def __lt__(self, other):
        return other.value < self.value

    def __hash__(self):
        return hash(self.value)

    def __repr__(self):
        return f"Descending({self.value!r})"


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)


def id_sort_key(record_id):
    """Ascending key for a record id: a UUID sorts as its canonical lowercase text, anything else as itself."""
    return str(record_id) if isinstance(record_id, uuid.UUID) else record_id


def scored_tie_break_key(occurred_at: datetime | None, seq: int, record_id) -> tuple:
    """Ascending key for equal values: ``occurred_at`` desc (missing last), ``seq`` desc, id asc.

    Plain numbers and text (negated where descending), so sorting compares in C. A naive
    ``occurred_at`` counts as UTC. Pass ``lambda rid: scored_tie_break_key(...)`` as the
    ``tie_break`` of the fusion functions.
    """
    if occurred_at is None:
        newest_first = (1, 0)
    else:
        if occurred_at.tzinfo is None:
            occurred_at = occurred_at.replace(tzinfo=timezone.utc)
        newest_first = (0, -((occurred_at - _EPOCH) // _MICROSECOND))
    return (*newest_first, -seq, id_sort_key(record_id))


def scored_sort_key(value: float, occurred_at: datetime | None, seq: int, record_id) -> tuple:
    """Ascending key implementing the scored order: value desc, then ``scored_tie_break_key``."""
    return (-value, *scored_tie_break_key(occurred_at, seq, record_id))


def order_scored(items: Iterable) -> list:
    """Return ``items`` in scored order.

    Each item exposes ``value`` (finite number), ``occurred_at`` (aware datetime), ``seq`` (int)
    and ``id``. Order: value desc, occurred_at desc, seq desc, id asc. Raises ``ValueError``
    for a non-finite value.
    """
    items = list(items)
    for item in items:
        if not math.isfinite(item.value):
            raise ValueError(f"record {item.id}: ranking value {item.value} is not finite")
    return sorted_refining_ties(items, lambda item: -item.value,
                                lambda item: scored_sort_key(item.value, item.occurred_at, item.seq, item.id))


def sorted_refining_ties(items: Iterable, coarse: Callable, fine: Callable) -> list:
    """``sorted(items, key=fine)``, for a key ``fine`` that refines ``coarse`` (``coarse(a) <
    coarse(b)`` implies ``fine(a) < fine(b)``): sorted by ``coarse``, then each run of equal
    ``coarse`` keys by ``fine``, so ``fine`` (a tie-break: a datetime difference, an id's text,
    an exact fraction) is built only for the items that share their coarse key."""
    items = list(items)
    coarse_keys = [coarse(item) for item in items]
    order = sorted(range(len(items)), key=coarse_keys.__getitem__)
    ordered, start = [], 0
    while start < len(order):
        end = start + 1
        while end < len(order) and coarse_keys[order[end]] == coarse_keys[order[start]]:
            end += 1
        run = [items[i] for i in order[start:end]]
        ordered += run if len(run) == 1 else sorted(run, key=fine)
        start = end
    return ordered


_FAMILIES = ((bool, "boolean"), (int, "number"), (float, "number"), (str, "string"), (datetime, "datetime"))


def order_structured(items: Iterable, order_by: Sequence, *,
                     field_value: Callable[[Any, str], object] | None = None) -> list:
    """Return ``items`` in structured order.

    ``order_by`` is a sequence of objects with ``field`` and ``direction`` (``asc``/``desc``)
    or of ``(field, direction)`` pairs, compared in declared order. Each item exposes ``seq`` and
    ``id``, and its field values through ``item.fields[name]`` unless ``field_value(item, name)``
    is given. A value of ``None`` (or a NaN float) is missing and sorts last in both directions.
    Remaining ties: ``seq`` ascending, then id ascending. Strings compare by code point.
    Raises ``ValueError`` for an unknown direction, or when one field mixes value types that do
    not compare (string with number, aware with naive datetime, lists, ...).
    """
    read = field_value or (lambda item, name: item.fields.get(name))
    keys = []
    for entry in order_by:
        name, direction = entry if isinstance(entry, tuple) else (entry.field, entry.direction)
        if direction not in ("asc", "desc"):
            raise ValueError(f"order_by {name!r}: direction must be asc or desc, got {direction!r}")
        keys.append((name, direction == "desc"))

    items = list(items)
    rows = []
    for item in items:
        row = []
        for name, descending in keys:
            value = read(item, name)
            if isinstance(value, float) and value != value:
                value = None
            # (missing?, value): missing sorts after present in either direction.
            row.append((True, None) if value is None else (False, Descending(value) if descending else value))
        rows.append(row)
    for index, (name, _) in enumerate(keys):
        _check_comparable(name, [row[index][1] for row in rows if not row[index][0]])
    order = sorted(range(len(items)), key=lambda i: (rows[i], items[i].seq, id_sort_key(items[i].id)))
    return [items[i] for i in order]


def _check_comparable(name: str, values: list) -> None:
    families = set()
    for value in values:
        raw = value.value if isinstance(value, Descending) else value
        family = next((label for kind, label in _FAMILIES if isinstance(raw, kind)), None)
        if family is None:
            raise ValueError(f"order_by {name!r}: a {type(raw).__name__} value cannot be sorted")
        if family == "datetime":
            family = "aware datetime" if raw.utcoffset() is not None else "naive datetime"
        if family == "boolean":
            family = "number"  # bool compares with numbers exactly as False=0, True=1
        families.add(family)
    if len(families) > 1:
        raise ValueError(f"order_by {name!r}: values of different types cannot be compared "
                         f"({', '.join(sorted(families))})")
