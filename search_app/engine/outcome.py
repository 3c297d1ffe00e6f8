"""What a search produces, from the sources' ranked runs to the hits: the pool of one source or
of several fused (weighted RRF, boost), the graph boost, public scores over the ranked pool and
the cut to k. Pure: the pipeline (``search_app.pipeline``) runs the sources and calls these."""
from __future__ import annotations

import uuid
from collections.abc import Hashable
from dataclasses import dataclass, replace
from datetime import datetime

from catalog_app.record_rows import CanonicalRow

from .fusion import apply_boost, order_fused, rrf_fuse
from .rank_evaluate import Signals, evaluate_rank
from .resolve import ResolvedSource
from .result_order import order_scored, public_scores, score_bounds, scored_tie_break_key
from .spec import SearchSpec

SCORED_RANKING = {"scored": True, "score_semantics": "query_relative", "score_range": [0.0, 1.0],
                  "normalization": "min_max", "normalization_scope": "ranked_candidates", "calibrated": False,
                  "higher_is_better": True, "native_score_field": "rank_score"}


@dataclass(frozen=True, slots=True)
class RankedRow:
    row: CanonicalRow
    value: float | None  # None in structured mode

    @property
    def id(self) -> uuid.UUID:
        return self.row.id

    @property
    def occurred_at(self) -> datetime:
        return self.row.occurred_at

    @property
    def seq(self) -> int:
        return self.row.seq


@dataclass(frozen=True, slots=True)
class SourceRun:
    resolved: ResolvedSource
    candidate_count: int
    ranked: tuple[RankedRow, ...]  # every survivor, ranked (after rerank)
    cut: tuple[RankedRow, ...]  # what the source contributes
    judged: int  # records judged by the rerank model


@dataclass(frozen=True, slots=True)
class Hit:
    row: CanonicalRow
    rank_score: float | None
    score: float | None
    source_ranks: dict | None


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    spec: SearchSpec
    hits: tuple[Hit, ...]
    ranking: dict
    sources: tuple[SourceRun, ...]
    profiles: tuple[str, ...]
    diagnostics: dict  # optional "rerank" and "graph_boost" objects



@dataclass(frozen=True, slots=True)
class Pooled:
    """A record in the final pool: its value (None when structured) and source positions."""

    row: CanonicalRow
    value: float | None
    source_ranks: dict | None


def scored_value(item: RankedRow | Pooled) -> float:
    """The value of ``item`` in a scored ranking, which every item of one carries."""
    if item.value is None:
        raise ValueError("a scored ranking holds an item without a value")
    return item.value


@dataclass(frozen=True, slots=True)
class Pool:
    items: tuple[Pooled, ...]  # ordered; the first k are returned
    bounds: tuple[float, float] | None  # public score bounds; None when unscored or empty


def single_pool(spec: SearchSpec, run: SourceRun) -> tuple[Pool, dict]:
    items = tuple(Pooled(r.row, r.value, None) for r in run.cut)
    if run.resolved.source.mode == "structured":
        return Pool(items, None), {"kind": "structured", "scored": False}
    kind = "llm_judge" if spec.rerank is not None else "rank_expression"
    bounds = score_bounds(scored_value(r) for r in run.ranked) if run.ranked else None
    return Pool(items, bounds), {"kind": kind, **SCORED_RANKING}


def fused_pool(spec: SearchSpec, runs: tuple[SourceRun, ...], now: datetime) -> tuple[Pool, dict]:
    rows: dict[Hashable, CanonicalRow] = {r.id: r.row for run in runs for r in run.cut}

    def tie_break(record_id):
        row = rows[record_id]
        return scored_tie_break_key(row.occurred_at, row.seq, row.id)

    if spec.rank_constant is None or any(run.resolved.source.name is None for run in runs):
        raise ValueError("a fused search names each source and has a rank constant")
    fused = rrf_fuse(((run.resolved.source.name or "", run.resolved.source.weight, [r.id for r in run.cut])
                      for run in runs), rank_constant=spec.rank_constant, tie_break=tie_break)
    if spec.boost is not None and fused:
        signals = [Signals(scores=rows[h.id].scores, created_at=rows[h.id].created_at,
                           occurred_at=rows[h.id].occurred_at, last_accessed=rows[h.id].last_accessed) for h in fused]
        boost = evaluate_rank(spec.boost, signals, now, path="boost")
        fused = order_fused(apply_boost(fused, boost), tie_break=tie_break)
    items = tuple(Pooled(rows[h.id], h.value, dict(h.source_ranks)) for h in fused)
    bounds = score_bounds(h.value for h in fused) if fused else None
    return Pool(items, bounds), {"kind": "rrf", **SCORED_RANKING}


def graph_boosted_pool(pool: Pool, distances: dict[str, int], weight: float) -> tuple[Pool, int]:
    """``boosted = previous + weight / (distance + 1)`` for hits whose key or entity was reached
    (nearest wins), then everything re-sorted by value and recency; bounds over the boosted pool."""
    boosted, matched = [], 0
    for item in pool.items:
        reached = [distances[name] for name in (item.row.key, item.row.entity) if name in distances]
        bonus = weight / (min(reached) + 1) if reached else 0.0
        matched += bool(reached)
        base = item.value if item.value is not None else 0.0
        boosted.append((base + bonus, item))
    order = order_scored(_Sortable(value, item) for value, item in boosted)
    scored = any(item.value is not None for item in pool.items)
    items = tuple(replace(s.item, value=s.value) if scored else s.item for s in order)
    bounds = score_bounds(s.value for s in order) if scored and order else None
    return Pool(items, bounds), matched


@dataclass(frozen=True, slots=True)
class _Sortable:
    value: float
    item: Pooled

    @property
    def id(self):
        return self.item.row.id

    @property
    def occurred_at(self):
        return self.item.row.occurred_at

    @property
    def seq(self):
        return self.item.row.seq


def final_hits(pool: Pool, k: int, *, scored: bool) -> tuple[Hit, ...]:
    cut = pool.items[:k]
    if not scored or pool.bounds is None:
        return tuple(Hit(item.row, None, None, item.source_ranks) for item in cut)
    scores = public_scores([scored_value(item) for item in cut], *pool.bounds)
    return tuple(Hit(item.row, item.value, score, item.source_ranks) for item, score in zip(cut, scores))
