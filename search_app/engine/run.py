"""Running a resolved search end to end (views-and-search "How a search actually runs").

resolve → embed the query once if any source needs it → per source (concurrently, bounded by
SEARCH_MAX_CONCURRENCY): candidates, canonical reload, typed recheck, signals, rank or
order_by, optional model rerank, cut → fuse (weighted RRF, boost) when combined → graph
boost → public scores over the ranked pool → top k. Ordering is deterministic whatever order
sources finish in: each source's list depends only on its own inputs, results are gathered in
declaration order, and every sort has a total tie-break.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from functools import partial

from catalog_app.catalog.registry import Catalog
from catalog_app.embedding import embed_query
from catalog_app.llm import ProviderError
from memseek_site.conf import memseek_setting
from memseek_site.parallel import run_all

from ..backends import backend_for
from .candidates import CanonicalRow, QueryContext
from .fusion import apply_boost, order_fused, rrf_fuse
from .rank_evaluate import Signals, evaluate_rank
from .rank_expression import rank_signals
from .recheck import passes_filters, typed_value
from .rerank import rerank, require_rerank_model
from .resolve import ResolvedSource, resolve_search
from .rows import render_row_of, rendered_score_names
from .scoring import order_scored, order_structured, public_scores, score_bounds, scored_tie_break_key
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


def run_search(*, workspace, spec: SearchSpec, catalog: Catalog, view: bool = False) -> SearchOutcome:
    """Run ``spec`` for ``workspace``. Raises ``ResolveError`` for catalog problems and
    ``ApiError`` for unavailable dependencies, model failures and non-finite rank values."""
    resolved = resolve_search(spec, catalog, view=view)
    models = catalog.value("models", "models")
    if spec.rerank is not None:
        require_rerank_model(models)
    boost_walk = None
    if spec.graph_boost is not None:
        from ..graph.service import graph_boost_walk

        gb = spec.graph_boost
        boost_walk = graph_boost_walk(workspace=workspace, catalog=catalog, graph=gb.graph, anchor=gb.anchor,
                                      depth=gb.depth, limit=gb.limit)
    context = _context(workspace, spec, catalog, resolved)
    now = datetime.now(timezone.utc)
    score_names = rendered_score_names(catalog)
    runs = _run_sources(resolved, lambda source: _run_source(spec, source, context, now, models, score_names))
    if spec.fused:
        pool, ranking = _fuse(spec, runs, now)
    else:
        pool, ranking = _single(spec, runs[0])
    diagnostics = {}
    if spec.rerank is not None:
        diagnostics["rerank"] = {"backend": "llm_judge", "top_n": spec.rerank.top_n, "model": "cheap",
                                 "judged_records": sum(run.judged for run in runs)}
    if boost_walk is not None:
        pool, matched = _graph_boost(pool, boost_walk.distances, spec.graph_boost.weight)
        diagnostics["graph_boost"] = {"anchor": spec.graph_boost.anchor, "depth": spec.graph_boost.depth,
                                      "weight": spec.graph_boost.weight, "matched_records": matched,
                                      "edge_count": boost_walk.edge_count}
    hits = _finalize(pool, spec.k, scored=ranking["scored"])
    return SearchOutcome(spec, hits, ranking, runs, tuple(sorted({run.resolved.profile for run in runs})), diagnostics)


def _context(workspace, spec: SearchSpec, catalog: Catalog, resolved) -> QueryContext:
    embedding = catalog.value("models", "models").embedding
    vector = None
    if any(source.source.mode in ("vector", "hybrid") for source in resolved):
        try:
            vector = embed_query(embedding, spec.q, workspace_id=workspace.pk)
        except ProviderError as error:
            raise error.prefixed("The query could not be embedded", code="embedding_unavailable") from None
    return QueryContext(workspace.pk, spec.q, vector, embedding.space, embedding.dimensions)


def _run_sources(resolved, run_one) -> tuple[SourceRun, ...]:
    return tuple(run_all([partial(run_one, source) for source in resolved]))


def _run_source(spec: SearchSpec, resolved: ResolvedSource, context, now: datetime, models, score_names) -> SourceRun:
    reads = rank_signals(resolved.rank) if resolved.rank is not None else frozenset()
    # Text and content are read only for the rows kept, unless the recheck, the structured
    # order or the rerank prompt reads them for every survivor.
    bodies = bool(resolved.source.where) or resolved.source.mode == "structured" or spec.rerank is not None
    backend = backend_for(resolved.backend)
    early_reload = partial(backend.reload_by_id, resolved, context, reads=reads, bodies=bodies)
    ids, bm25, reloaded = backend.candidate_ids(resolved, context, bm25="bm25" in reads, early_reload=early_reload)
    survivors = [row for row in backend.reload_rows(resolved, context, ids, bm25, reads=reads, bodies=bodies,
                                                    reloaded=reloaded)
                 if passes_filters(row, resolved)]
    judged = 0
    if resolved.source.mode == "structured":
        def field_value(row, name):
            return typed_value(row, resolved.access(name, row.collection, row.collection_version))

        ranked = [RankedRow(row, None) for row in order_structured(survivors, resolved.source.order_by,
                                                                   field_value=field_value)]
    else:
        signals = [Signals(similarity=row.similarity, text_match=row.text_match, bm25=row.bm25, scores=row.scores,
                           created_at=row.created_at, occurred_at=row.occurred_at,
                           last_accessed=row.last_accessed) for row in survivors]
        values = evaluate_rank(resolved.rank, signals, now, path="rank")
        ranked = order_scored(RankedRow(row, value) for row, value in zip(survivors, values))
        if spec.rerank is not None and ranked:
            result = rerank(models=models, query=spec.q, rows=[render_row_of(r.row, score_names) for r in ranked],
                            top_n=spec.rerank.top_n, prompt_limit=memseek_setting("MAX_PROMPT_TOKENS"))
            ranked = [RankedRow(ranked[index].row, value) for index, value in zip(result.order, result.values)]
            judged = result.judged
    keep = resolved.source.k
    if spec.graph_boost is not None and not spec.fused:
        keep = min(100, max(resolved.source.k, resolved.source.candidate_cap()))
    cut = ranked[:keep]
    if not bodies:
        cut = [RankedRow(row, r.value) for r, row in zip(cut, backend.with_bodies([r.row for r in cut]))]
    return SourceRun(resolved, len(ids), tuple(ranked), tuple(cut), judged)


@dataclass(frozen=True, slots=True)
class _Pooled:
    """A record in the final pool: its value (None when structured) and source positions."""

    row: CanonicalRow
    value: float | None
    source_ranks: dict | None


@dataclass(frozen=True, slots=True)
class _Pool:
    items: tuple[_Pooled, ...]  # ordered; the first k are returned
    bounds: tuple[float, float] | None  # public score bounds; None when unscored or empty


def _single(spec: SearchSpec, run: SourceRun) -> tuple[_Pool, dict]:
    items = tuple(_Pooled(r.row, r.value, None) for r in run.cut)
    if run.resolved.source.mode == "structured":
        return _Pool(items, None), {"kind": "structured", "scored": False}
    kind = "llm_judge" if spec.rerank is not None else "rank_expression"
    bounds = score_bounds(r.value for r in run.ranked) if run.ranked else None
    return _Pool(items, bounds), {"kind": kind, **SCORED_RANKING}


def _fuse(spec: SearchSpec, runs: tuple[SourceRun, ...], now: datetime) -> tuple[_Pool, dict]:
    rows = {r.id: r.row for run in runs for r in run.cut}

    def tie_break(record_id):
        row = rows[record_id]
        return scored_tie_break_key(row.occurred_at, row.seq, row.id)

    fused = rrf_fuse(((run.resolved.source.name, run.resolved.source.weight, [r.id for r in run.cut]) for run in runs),
                     rank_constant=spec.rank_constant, tie_break=tie_break)
    if spec.boost is not None and fused:
        signals = [Signals(scores=rows[h.id].scores, created_at=rows[h.id].created_at,
                           occurred_at=rows[h.id].occurred_at, last_accessed=rows[h.id].last_accessed) for h in fused]
        boost = evaluate_rank(spec.boost, signals, now, path="boost")
        fused = order_fused(apply_boost(fused, boost), tie_break=tie_break)
    items = tuple(_Pooled(rows[h.id], h.value, dict(h.source_ranks)) for h in fused)
    bounds = score_bounds(h.value for h in fused) if fused else None
    return _Pool(items, bounds), {"kind": "rrf", **SCORED_RANKING}


def _graph_boost(pool: _Pool, distances: dict[str, int], weight: float) -> tuple[_Pool, int]:
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
    return _Pool(items, bounds), matched


@dataclass(frozen=True, slots=True)
class _Sortable:
    value: float
    item: _Pooled

    @property
    def id(self):
        return self.item.row.id

    @property
    def occurred_at(self):
        return self.item.row.occurred_at

    @property
    def seq(self):
        return self.item.row.seq


def _finalize(pool: _Pool, k: int, *, scored: bool) -> tuple[Hit, ...]:
    cut = pool.items[:k]
    if not scored or pool.bounds is None:
        return tuple(Hit(item.row, None, None, item.source_ranks) for item in cut)
    scores = public_scores([item.value for item in cut], *pool.bounds)
    return tuple(Hit(item.row, item.value, score, item.source_ranks) for item, score in zip(cut, scores))
