"""Running a resolved search end to end (views-and-search "How a search actually runs").

resolve → embed the query once if any source needs it → per source (concurrently, bounded by
SEARCH_MAX_CONCURRENCY): candidates, canonical reload, typed recheck, signals, rank or
order_by, optional model rerank, cut → fuse (weighted RRF, boost) when combined → graph
boost → public scores over the ranked pool → top k. Ordering is deterministic whatever order
sources finish in: each source's list depends only on its own inputs, results are gathered in
declaration order, and every sort has a total tie-break.
"""
from __future__ import annotations

from datetime import datetime, timezone
from functools import partial

from catalog_app.bm25_terms import query_terms_check
from catalog_app.catalog.registry import Catalog
from catalog_app.embedding import embed_query
from catalog_app.embedding_serving import serving_config
from catalog_app.llm import ProviderError
from memseek_site import deadline
from memseek_site.conf import memseek_setting
from memseek_site.parallel import run_all

from .backends import backend_for
from .engine.bm25 import LEXICAL_SIGNALS
from .engine.candidates import QueryContext
from .engine.outcome import (RankedRow, SearchOutcome, SourceRun, final_hits, fused_pool, graph_boosted_pool,
                             single_pool)
from .engine.rank_evaluate import Signals, evaluate_rank
from .engine.rank_expression import rank_signals
from .engine.recheck import passes_filters, typed_value
from .engine.rerank import rerank, require_rerank_model
from .engine.resolve import ResolvedSource, resolve_search
from .engine.rendered_rows import render_row_of, rendered_score_names
from .engine.result_order import order_scored, order_structured
from .engine.spec import SearchSpec
from .engine.trace import NO_TRACE, Trace


def run_search(*, workspace, spec: SearchSpec, catalog: Catalog, view: bool = False,
               trace: Trace = NO_TRACE) -> SearchOutcome:
    """Run ``spec`` for ``workspace``, its stages reported to ``trace`` (``engine.trace``). Raises
    ``ResolveError`` for catalog problems and ``ApiError`` for unavailable dependencies, model
    failures and non-finite rank values."""
    if spec.q is not None:
        query_terms_check(spec.q, "q")
    with trace.stage("resolve"):
        resolved = resolve_search(spec, catalog, view=view)
    models = catalog.value("models", "models")
    if spec.rerank is not None:
        require_rerank_model(models)
    boost_walk = None
    if spec.graph_boost is not None:
        from .graph.service import graph_boost_walk

        gb = spec.graph_boost
        boost_walk = graph_boost_walk(workspace=workspace, catalog=catalog, graph=gb.graph, anchor=gb.anchor,
                                      depth=gb.depth, limit=gb.limit)
    context = _context(workspace, spec, catalog, resolved, trace)
    deadline.check("search: query vector")
    now = datetime.now(timezone.utc)
    score_names = rendered_score_names(catalog)
    runs = _run_sources(resolved, lambda source: _run_source(spec, source, context, now, models, score_names,
                                                                     trace))
    deadline.check("search: sources")
    if spec.fused:
        with trace.stage("fuse"):
            pool, ranking = fused_pool(spec, runs, now)
    else:
        pool, ranking = single_pool(spec, runs[0])
    diagnostics = {}
    if spec.rerank is not None:
        diagnostics["rerank"] = {"backend": "llm_judge", "top_n": spec.rerank.top_n, "model": "cheap",
                                 "judged_records": sum(run.judged for run in runs)}
    if boost_walk is not None:
        pool, matched = graph_boosted_pool(pool, boost_walk.distances, spec.graph_boost.weight)
        diagnostics["graph_boost"] = {"anchor": spec.graph_boost.anchor, "depth": spec.graph_boost.depth,
                                      "weight": spec.graph_boost.weight, "matched_records": matched,
                                      "edge_count": boost_walk.edge_count}
    with trace.stage("finalize"):
        hits = final_hits(pool, spec.k, scored=ranking["scored"])
    return SearchOutcome(spec, hits, ranking, runs, tuple(sorted({run.resolved.profile for run in runs})), diagnostics)


def _context(workspace, spec: SearchSpec, catalog: Catalog, resolved, trace: Trace = NO_TRACE) -> QueryContext:
    # One read of the workspace's serving runtime: the query embeds and searches in that one space.
    embedding = serving_config(workspace.pk, catalog.value("models", "models").embedding)
    vector = None
    if any(source.source.mode in ("vector", "hybrid") for source in resolved):
        with trace.stage("query vector"):
            vector = trace.query_vector(spec.q)
            try:
                vector = vector if vector is not None else embed_query(embedding, spec.q, workspace_id=workspace.pk)
            except ProviderError as error:
                raise error.prefixed("The query could not be embedded", code="embedding_unavailable") from None
    return QueryContext(workspace.pk, spec.q, vector, embedding.space, embedding.dimensions)


def _run_sources(resolved, run_one) -> tuple[SourceRun, ...]:
    return tuple(run_all([partial(run_one, source) for source in resolved]))


def _run_source(spec: SearchSpec, resolved: ResolvedSource, context, now: datetime, models, score_names,
                trace: Trace = NO_TRACE) -> SourceRun:
    reads = rank_signals(resolved.rank) if resolved.rank is not None else frozenset()
    # Text and content are read only for the rows kept, unless the recheck, the structured
    # order or the rerank prompt reads them for every survivor.
    bodies = bool(resolved.source.where) or resolved.source.mode == "structured" or spec.rerank is not None
    backend = backend_for(resolved.backend)
    early_reload = partial(backend.reload_by_id, resolved, context, reads=reads, bodies=bodies)
    with trace.stage("candidates", resolved):
        ids, bm25, reloaded = backend.candidate_ids(resolved, context, bm25=reads & LEXICAL_SIGNALS.keys(),
                                                    early_reload=early_reload, trace=trace)
    trace.produced("candidates", ids, resolved)
    with trace.stage("reload", resolved):
        rows = backend.reload_rows(resolved, context, ids, bm25, reads=reads, bodies=bodies, reloaded=reloaded)
    with trace.stage("recheck", resolved):
        survivors = [row for row in rows if passes_filters(row, resolved)]
    judged = 0
    if resolved.source.mode == "structured":
        def field_value(row, name):
            return typed_value(row, resolved.access(name, row.collection, row.collection_version))

        with trace.stage("structured order", resolved):
            ranked = [RankedRow(row, None) for row in order_structured(survivors, resolved.source.order_by,
                                                                       field_value=field_value)]
    else:
        signals = [Signals(similarity=row.similarity, text_match=row.text_match, bm25=row.bm25, bm25_en=row.bm25_en,
                           scores=row.scores, created_at=row.created_at, occurred_at=row.occurred_at,
                           last_accessed=row.last_accessed) for row in survivors]
        with trace.stage("rank", resolved):
            values = evaluate_rank(resolved.rank, signals, now, path="rank")
        with trace.stage("order", resolved):
            ranked = order_scored(RankedRow(row, value) for row, value in zip(survivors, values))
        if spec.rerank is not None and ranked:
            with trace.stage("rerank", resolved):
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
