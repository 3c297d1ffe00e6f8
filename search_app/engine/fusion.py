"""Weighted reciprocal rank fusion and the post-fusion boost.

RRF(record) = sum over the sources that found it of weight / (rank_constant + position), with
positions counted from 1 (spec "How the merge works"). Invariants:

* Fusion uses positions only; a source that did not find a record contributes nothing, and a
  record listed twice in one source counts once, at its first position.
* Sums are computed exactly (``fractions.Fraction``) and rounded to float once, so the merged
  order depends only on the ratios between weights: weights 1:2 merge exactly like 10:20 or
  0.5:1.0 (same order, same ``source_ranks``), and exact ties are real ties.
* Order is RRF descending; records with exactly equal RRF follow the caller's ``tie_break``
  key (the engine passes the standard scored tie-break: ``occurred_at`` desc, ``seq`` desc, id
  asc) and, after it or without it, the default tie-break: best (lowest) position in any source,
  then the earlier-declared source holding that position. The default needs no record metadata
  and never depends on id values.

Pure Python: no Django imports.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from types import MappingProxyType

from .result_order import sorted_refining_ties


@dataclass(frozen=True, slots=True)
class FusedHit:
    """One merged record.

    ``rrf`` is the weighted RRF sum; ``value`` is the ranking value (equal to ``rrf`` until
    ``apply_boost`` multiplies it); ``source_ranks`` maps each source that found the record to
    its 1-based position there, in source declaration order (read-only, not normalized).
    """

    id: Hashable
    rrf: float
    value: float
    source_ranks: Mapping[str, int] = field(hash=False)


def rrf_fuse(sources: Iterable[tuple[str, float, Sequence[Hashable]]], *, rank_constant: float,
             tie_break: Callable[[Hashable], object] | None = None) -> list[FusedHit]:
    """Merge ranked id lists by weighted RRF.

    ``sources`` are ``(name, weight, ordered ids)`` triples, best first. Each source adds
    ``weight / (rank_constant + position)`` for each id it lists (position from 1, first
    occurrence only). ``tie_break(id)`` is an ascending sort key applied among exactly equal
    RRF sums before the default tie-break (see the module docstring).
    Returns every id found, ordered by RRF descending. Raises ``ValueError`` for a
    ``rank_constant`` that is not a positive finite number, a weight that is not a positive
    finite number, or a duplicate or non-string source name.
    """
    constant = _positive(rank_constant, "rank_constant")
    sums: dict[Hashable, Fraction] = {}
    ranks: dict[Hashable, dict[str, int]] = {}
    best: dict[Hashable, tuple[int, int]] = {}  # id -> (best position, index of the source holding it)
    names: set[str] = set()
    for source_index, (name, weight, ids) in enumerate(sources):
        if not isinstance(name, str) or name in names:
            raise ValueError(f"source names must be unique strings, got {name!r}")
        names.add(name)
        exact_weight = _positive(weight, f"source {name!r} weight")
        for position, record_id in enumerate(ids, start=1):
            found = ranks.setdefault(record_id, {})
            if name in found:
                continue
            found[name] = position
            share = _share(exact_weight, constant, position)
            sums[record_id] = share if record_id not in sums else sums[record_id] + share
            best[record_id] = min(best.get(record_id, (position, source_index)), (position, source_index))
    rounded = {record_id: float(total) for record_id, total in sums.items()}

    def key(record_id):
        tie = tie_break(record_id) if tie_break is not None else ()
        return (-sums[record_id], tie, best[record_id])

    # Rounding is monotone, so the float sums order every pair they tell apart as the exact sums
    # do; only records with equal floats compare their fractions and tie-breaks.
    return [FusedHit(id=record_id, rrf=rounded[record_id], value=rounded[record_id],
                     source_ranks=MappingProxyType(ranks[record_id]))
            for record_id in sorted_refining_ties(sums, lambda record_id: -rounded[record_id], key)]


@functools.lru_cache(maxsize=4096)
def _share(weight: Fraction, constant: Fraction, position: int) -> Fraction:
    """One listing's exact RRF share, ``weight / (constant + position)``: the same few weights,
    constants and positions recur in every fusion, and a fraction's division is its costly part."""
    return weight / (constant + position)


def apply_boost(hits: Sequence[FusedHit], boost_values: Sequence[float]) -> list[FusedHit]:
    """Apply a post-fusion boost: ``value = rrf * max(0, boost)``, per hit, in the given order.

    ``boost_values`` are aligned with ``hits`` (typically ``evaluate_rank`` of the boost
    expression over the merged records). The result keeps the input order; re-sort it with
    ``order_fused`` or the scored order. Raises ``ValueError`` for a length mismatch or a
    non-finite boost value.
    """
    if len(hits) != len(boost_values):
        raise ValueError(f"{len(boost_values)} boost values for {len(hits)} hits")
    boosted = []
    for hit, boost in zip(hits, boost_values):
        if not math.isfinite(boost):
            raise ValueError(f"record {hit.id}: boost value {boost} is not finite")
        boosted.append(replace(hit, value=hit.rrf * max(0.0, boost)))
    return boosted


def order_fused(hits: Iterable[FusedHit], *, tie_break: Callable[[Hashable], object] | None = None) -> list[FusedHit]:
    """Order hits by ``value`` descending, then ``tie_break(id)`` ascending, then their current order."""
    return sorted(hits, key=lambda hit: (-hit.value, tie_break(hit.id) if tie_break is not None else ()))


def sweep_weight_ratio(rank_constant: float, k_leading: int) -> float:
    """The weight ratio at which a leading source's k-th record ties another source's 1st-only record.

    A source A sweeps every record that only source B found once
    ``weight_A / weight_B >= (rank_constant + k_A) / (rank_constant + 1)`` (spec "Weight is
    measured against rank_constant"). Raises ``ValueError`` for a non-positive constant or ``k``.
    """
    _positive(rank_constant, "rank_constant")
    if isinstance(k_leading, bool) or not isinstance(k_leading, int) or k_leading < 1:
        raise ValueError(f"k_leading must be a positive integer, got {k_leading!r}")
    return (rank_constant + k_leading) / (rank_constant + 1)


def _positive(value, what: str) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0 or value != value:
        raise ValueError(f"{what} must be a positive finite number, got {value!r}")
    if isinstance(value, float) and math.isinf(value):
        raise ValueError(f"{what} must be a positive finite number, got {value!r}")
    return Fraction(value)
