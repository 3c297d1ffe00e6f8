"""Running a resolved search end to end (views-and-search "How a search actually runs").

resolve → embed the query once if any source needs it → per source: candidates, canonical
reload, typed recheck, signals, rank (or order_by), cut to the source k → fuse (weighted RRF
and boost) when combined → public scores over the ranked pool → top k → results. Ordering is
deterministic whatever order sources finish in: each source's list depends only on its own
inputs, and fusion sorts by value with a total tie-break.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timezone

from catalog_app.catalog.registry import Catalog
from catalog_app.embedding import embed_query
from catalog_app.llm import ProviderError
from memseek_site.errors import ApiError

from . import pg_backend
from .fusion import apply_boost, order_fused, rrf_fuse
from .rank_expression import RankEvaluationError, Signals, evaluate_rank
from .recheck import passes_filters, typed_value
from .resolve import ResolvedSource, resolve_search
from .scoring import order_scored, order_structured, public_scores, score_bounds, scored_tie_break_key
from .spec import SearchSpec

SCORED_RANKING = {"scored": True, "score_semantics": "query_relative", "score_range": [0.0, 1.0],
                  "normalization": "min_max", "normalization_scope": "ranked_candidates", "calibrated": False,
                  "higher_is_better": True, "native_score_field": "rank_score"}


@dataclass(frozen=True, slots=True)
class RankedRow:
    row: pg_backend.CanonicalRow
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
    ranked: tuple[RankedRow, ...]  # every survivor, ranked
    cut: tuple[RankedRow, ...]  # the first ``k``


@dataclass(frozen=True, slots=True)
class Hit:
    row: pg_backend.CanonicalRow
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


def run_search(*, workspace, spec: SearchSpec, catalog: Catalog, view: bool = False) -> SearchOutcome:
    """Run ``spec`` for ``workspace``. Raises ``ResolveError`` for catalog problems and
    ``ApiError`` for unavailable dependencies and non-finite rank values."""
    resolved = resolve_search(spec, catalog, view=view)
    if spec.rerank is not None or spec.graph_boost is not None:
        stage = "rerank" if spec.rerank is not None else "graph_boost"
        raise ApiError("capability", f"{stage} is not enabled on this deployment", path=stage)
    context = _context(workspace, spec, catalog, resolved)
    now = datetime.now(timezone.utc)
    runs = tuple(_run_source(source, context, now) for source in resolved)
    if spec.fused:
        hits, ranking = _fuse(spec, runs, now)
    else:
        hits, ranking = _single(spec, runs[0])
    return SearchOutcome(spec, hits, ranking, runs, tuple(sorted({run.resolved.profile for run in runs})))


def _context(workspace, spec: SearchSpec, catalog: Catalog, resolved) -> pg_backend.QueryContext:
    embedding = catalog.value("models", "models").embedding
    vector = None
    if any(source.source.mode in ("vector", "hybrid") for source in resolved):
        try:
            vector = embed_query(embedding, spec.q)
        except ProviderError as error:
            raise ApiError("embedding_unavailable", f"The query could not be embedded: {error}") from None
    return pg_backend.QueryContext(workspace.pk, spec.q, vector, embedding.space, embedding.dimensions)


def _run_source(resolved: ResolvedSource, context: pg_backend.QueryContext, now: datetime) -> SourceRun:
    ids = pg_backend.candidate_ids(resolved, context)
    survivors = [row for row in pg_backend.reload_rows(resolved, context, ids) if passes_filters(row, resolved)]
    if resolved.source.mode == "structured":
        def field_value(row, name):
            return typed_value(row, resolved.access(name, row.collection, row.collection_version))

        ranked = [RankedRow(row, None) for row in order_structured(survivors, resolved.source.order_by,
                                                                   field_value=field_value)]
    else:
        signals = [Signals(similarity=row.similarity, text_match=row.text_match, scores=row.scores,
                           created_at=row.created_at, occurred_at=row.occurred_at,
                           last_accessed=row.last_accessed) for row in survivors]
        try:
            values = evaluate_rank(resolved.rank, signals, now)
        except RankEvaluationError as error:
            raise ApiError("rank_evaluation", f"{error.path}: {error.message}", path=error.path) from None
        ranked = order_scored(RankedRow(row, value) for row, value in zip(survivors, values))
    return SourceRun(resolved, len(ids), tuple(ranked), tuple(ranked[:resolved.source.k]))


def _single(spec: SearchSpec, run: SourceRun) -> tuple[tuple[Hit, ...], dict]:
    cut = run.cut[:spec.k]
    if run.resolved.source.mode == "structured":
        return tuple(Hit(r.row, None, None, None) for r in cut), {"kind": "structured", "scored": False}
    if not run.ranked:
        return (), {"kind": "rank_expression", **SCORED_RANKING}
    low, high = score_bounds(r.value for r in run.ranked)
    scores = public_scores([r.value for r in cut], low, high)
    return (tuple(Hit(r.row, r.value, s, None) for r, s in zip(cut, scores)),
            {"kind": "rank_expression", **SCORED_RANKING})


def _fuse(spec: SearchSpec, runs: tuple[SourceRun, ...], now: datetime) -> tuple[tuple[Hit, ...], dict]:
    rows = {r.id: r.row for run in runs for r in run.cut}

    def tie_break(record_id):
        row = rows[record_id]
        return scored_tie_break_key(row.occurred_at, row.seq, row.id)

    fused = rrf_fuse(((run.resolved.source.name, run.resolved.source.weight, [r.id for r in run.cut]) for run in runs),
                     rank_constant=spec.rank_constant, tie_break=tie_break)
    if spec.boost is not None:
        signals = [Signals(scores=rows[hit.id].scores, created_at=rows[hit.id].created_at,
                           occurred_at=rows[hit.id].occurred_at, last_accessed=rows[hit.id].last_accessed)
                   for hit in fused]
        try:
            boost = evaluate_rank(spec.boost, signals, now, path="boost")
        except RankEvaluationError as error:
            raise ApiError("rank_evaluation", f"{error.path}: {error.message}", path=error.path) from None
        fused = order_fused(apply_boost(fused, boost), tie_break=tie_break)
    ranking = {"kind": "rrf", **SCORED_RANKING}
    if not fused:
        return (), ranking
    low, high = score_bounds(hit.value for hit in fused)
    cut = fused[:spec.k]
    scores = public_scores([hit.value for hit in cut], low, high)
    return tuple(Hit(rows[hit.id], hit.value, score, dict(hit.source_ranks)) for hit, score in zip(cut, scores)), ranking
