"""``retrieve``: one call that assembles a token-budgeted MemoryContext, and receipts.

The clean service function behind ``POST /retrieve`` (and, later, the SDK's ``search()`` and
the MCP tool ``search_memory``). Stages:

1. parse the request (unless already parsed), read the workspace settings, compile the
   caller's scope into SQL (``retrieval_app.scope``);
2. embed the query once, only when a collection in scope is embedded;
3. legs, concurrently: vector and text (and the policy records, and the policy-drop count for
   ``explain``); the top ``STRONG_MATCHES`` of their RRF fusion are the strong matches; then
   graph, entity and derivatives from the strong matches, concurrently;
4. fuse the five legs with RRF (rank constant 60, equal weights), reload the candidates under
   the same scope, rescore with the five factors (and learned utility when value-aware
   selection is on), apply the adaptive floor (not with ``raw``), rerank the top
   ``RERANK_TOP_N`` with the ``cheap`` model (assisted mode with ``rerank: true`` only), keep
   ``topN``;
5. compile sections under the budget (policies whole, or ``422 CONTEXT_BUDGET_TOO_SMALL``;
   ``raw`` skips the budget), store the receipt, touch what was delivered (after the response's
   scores are final; best effort), and answer. ``POST /evaluate`` runs the same stages with
   ``side_effects=False``: no receipt, no touch.

Ordering is deterministic whatever order concurrent legs finish in: each leg depends only on
its inputs and every sort has a total tie-break.
"""
from __future__ import annotations

import hashlib
import time
import uuid
from datetime import datetime, timezone
from functools import partial

from catalog_app.catalog.runtime import catalog_for_workspace
from catalog_app.embedding import embed_query
from catalog_app.embedding_serving import serving_config
from catalog_app.llm import ProviderError
from catalog_app.tasks import enqueue_touch
from memseek_site.conf import memseek_setting
from memseek_site.errors import ApiError
from memseek_site.replicas import primary_write
from search_app.engine.fusion import rrf_fuse
from search_app.engine.rerank import rerank, require_rerank_model
from search_app.engine.rendered_rows import render_row_of, rendered_score_names
from search_app.engine.trace import NO_TRACE, Trace

from . import explain
from .compile import SECTIONS, Item, compile_sections
from .entries import entry, policy_fields, rendered_row, section_of
from .feedback import record_utilities
from .legs import (LEGS, LegHit, QueryVector, derivatives_leg, entity_leg, graph_leg, policy_drop_count,
                   run_parallel, text_leg, vector_leg)
from .models import Receipt
from .request import RetrieveRequest, parse_retrieve_request
from .canonical_rows import policy_rows, reload_rows
from .scope import compile_scope
from .candidate_scores import Candidate, ScoringConfig, apply_floor, floor_threshold, rescore, scaled, trust
from .settings import retrieval_settings

RANK_CONSTANT = 60
STRONG_MATCHES = 10
RERANK_TOP_N = 20


def leg_cap(top_n: int) -> int:
    """Candidates each leg may propose."""
    return min(200, max(50, 5 * top_n))


def learned_utility(*, workspace, record_ids: list[uuid.UUID]) -> dict[uuid.UUID, float]:
    """Learned utility in [0, 1] per record, for value-aware selection, from receipt feedback
    (``retrieval_app.feedback``). A record without feedback is absent (it gets the neutral prior)."""
    return record_utilities(workspace=workspace, record_ids=record_ids)


def retrieve(*, workspace, request: RetrieveRequest | dict, side_effects: bool = True,
             trace: Trace = NO_TRACE) -> dict:
    """Assemble a MemoryContext for ``workspace``. ``request`` is a parsed ``RetrieveRequest``
    or a raw ``POST /retrieve`` body. Returns the response payload; raises ``ApiError``.

    ``side_effects=False`` (``POST /evaluate``): no receipt is stored and nothing is touched;
    ``receiptId`` is null and the payload gains ``ranking``, the ranked ids (policies excluded)
    in their final order after the ``topN`` cut. The stages (``RETRIEVE_STAGES``) and the legs'
    hits are reported to ``trace`` (``search_app.engine.trace``); each leg's stage runs on its thread."""
    started = time.perf_counter()
    latency: dict = {}
    if not isinstance(request, RetrieveRequest):
        request = parse_retrieve_request(request)
    with trace.stage("settings + catalog lookup"):
        settings = retrieval_settings(workspace)
        catalog = catalog_for_workspace(workspace)
    models = catalog.value("models", "models")
    if request.rerank:
        require_rerank_model(models)
    with _timer(latency, "scope"), trace.stage("scope"):
        scope = compile_scope(workspace_id=workspace.pk, request=request, catalog=catalog,
                              hide_superseded=settings.hide_superseded)
    budget = None if request.raw else (request.token_budget or settings.token_budget)
    with _timer(latency, "embed"):
        vector = (_embed(serving_config(workspace.pk, models.embedding), request.query, workspace.pk, trace)
                  if scope.embed else None)
    cap = leg_cap(request.top_n)
    legs, drops, phase_latency = _run_legs(scope, catalog, request, vector, settings.min_vector_similarity, cap,
                                           trace)
    latency.update(phase_latency)
    policy_records = legs.pop("policies")
    strong = legs.pop("strong")

    with _timer(latency, "fuse"), trace.stage("fuse"):
        fused = rrf_fuse(((name, 1.0, [hit.id for hit in legs[name]]) for name in LEGS), rank_constant=RANK_CONSTANT)
    with _timer(latency, "reload"), trace.stage("reload"):
        rows = reload_rows(scope, [hit.id for hit in fused])
    drops["scope"] = len(fused) - len(rows)
    found = _found(legs)
    with _timer(latency, "score"), trace.stage("score"):
        ranked, floor, floor_dropped = _rank(workspace, request, settings, catalog, fused, rows)
    drops["floor"] = floor_dropped
    with _timer(latency, "rerank"), trace.stage("rerank"):
        ordered, judged = _rerank(models, request, ranked, rows, catalog)
    drops["topN"] = max(0, len(ordered) - request.top_n)
    final = ordered[:request.top_n]

    with _timer(latency, "compile"), trace.stage("compile"):
        compiled = _compile(request, scope, catalog, policy_records, final, rows, found, budget)
    drops["budget"] = sum(len(items) for items in compiled.dropped.values())
    sections = _sections(request, compiled, fused, ranked, ordered, found, judged, floor)
    receipt_id = None
    if side_effects:
        with trace.stage("receipt insert"):
            receipt_id = str(_store_receipt(workspace, request, compiled, budget).id)
        enqueue_touch(item.id for name in SECTIONS for item in compiled.included[name])
    payload = {"receiptId": receipt_id, "mode": request.mode, "asOf": _iso(request.as_of),
               "asOfAxis": request.as_of_axis, "sections": sections, "compilation": compiled.report()}
    if not side_effects:
        payload["ranking"] = [str(scored.id) for scored in final]
    if request.explain:
        latency["total"] = _ms(started)
        payload["diagnostics"] = explain.diagnostics(
            candidates={name: len(legs[name]) for name in LEGS}, strong=len(strong), fused=len(fused),
            reloaded=len(rows), drops=drops, floor=floor,
            reranker={"requested": request.rerank, "mode": request.mode, "model": "cheap" if request.rerank else None,
                      "judged": len(judged or {})},
            latency=latency)
    return payload


def receipt_get(*, workspace, receipt_id: uuid.UUID) -> dict:
    """``GET /receipts/{id}``; another workspace's receipt is ``404 receipt_not_found`` too."""
    receipt = Receipt.objects.filter(workspace=workspace, pk=receipt_id).first()
    if receipt is None:
        raise ApiError("receipt_not_found", f"No receipt {receipt_id} in this workspace.", path="id")
    return {"id": str(receipt.id), "createdAt": receipt.created_at.isoformat(), "requestHash": receipt.request_hash,
            "mode": receipt.mode, "raw": receipt.raw, "tokenBudget": receipt.token_budget,
            "totalTokens": receipt.total_tokens, "sections": receipt.sections, "items": receipt.items}


# --- stages ----------------------------------------------------------------------------------

def _embed(config, query: str, workspace_id: int, trace: Trace = NO_TRACE) -> QueryVector:
    with trace.stage("query vector"):
        vector = trace.query_vector(query)
        try:
            if vector is None:
                vector = embed_query(config, query, workspace_id=workspace_id)
        except ProviderError as error:
            raise error.prefixed("The query could not be embedded", code="embedding_unavailable") from None
    return QueryVector(vector, config.space, config.dimensions)


def _run_legs(scope, catalog, request: RetrieveRequest, vector, min_similarity: float, cap: int, trace: Trace):
    latency: dict = {"legs": {}}
    phase1 = {"text": lambda: text_leg(scope, request.query, cap=cap), "policies": lambda: policy_rows(scope)}
    if vector is not None:
        phase1["vector"] = lambda: vector_leg(scope, vector, min_similarity=min_similarity, cap=cap)
    if request.explain:
        phase1["policyDrops"] = lambda: policy_drop_count(scope, request.query, vector,
                                                          min_similarity=min_similarity, cap=cap)
    started = time.perf_counter()
    first = run_parallel(_traced(trace, phase1))
    latency["phase1"] = _ms(started)
    legs = {name: first[name][0] if name in first else [] for name in ("vector", "text")}
    strong = _strong_matches(legs["vector"], legs["text"])
    phase2 = {}
    if strong:
        phase2 = {"graph": lambda: graph_leg(scope, catalog, strong, cap=cap),
                  "entity": lambda: entity_leg(scope, strong, cap=cap),
                  "derivatives": lambda: derivatives_leg(scope, strong, cap=cap)}
    started = time.perf_counter()
    second = run_parallel(_traced(trace, phase2))
    latency["phase2"] = _ms(started)
    for name in ("graph", "entity", "derivatives"):
        legs[name] = second[name][0] if name in second else []
    for name, (_, ms) in {**first, **second}.items():
        latency["legs"][name] = ms
    legs["policies"] = first["policies"][0]
    legs["strong"] = strong
    drops = {"policy": first["policyDrops"][0] if "policyDrops" in first else 0}
    return legs, drops, latency


_LEG_STAGES = {"vector": "leg vector", "text": "leg text", "policies": "leg policies",
               "policyDrops": "leg policy drops", "graph": "leg graph", "entity": "leg entity",
               "derivatives": "leg derivatives"}


def _traced(trace: Trace, tasks: dict) -> dict:
    """``tasks`` (leg name -> callable), each inside its leg's stage unless untraced."""
    if trace is NO_TRACE:
        return tasks
    return {name: partial(_leg_in_stage, trace, name, task) for name, task in tasks.items()}


def _leg_in_stage(trace: Trace, name: str, task):
    with trace.stage(_LEG_STAGES[name]):
        result = task()
    if name != "policyDrops":  # a count, not hits
        trace.produced(_LEG_STAGES[name], result)
    return result


def _strong_matches(vector: list[LegHit], text: list[LegHit]) -> list[LegHit]:
    by_id = {hit.id: hit for hit in (*text, *vector)}
    fused = rrf_fuse((("vector", 1.0, [hit.id for hit in vector]), ("text", 1.0, [hit.id for hit in text])),
                     rank_constant=RANK_CONSTANT)
    return [by_id[hit.id] for hit in fused[:STRONG_MATCHES]]


def _found(legs: dict) -> dict:
    """id -> {leg: (1-based rank, hit)}."""
    found: dict = {}
    for name in LEGS:
        for rank, hit in enumerate(legs[name], start=1):
            found.setdefault(hit.id, {}).setdefault(name, (rank, hit))
    return found


def _rank(workspace, request, settings, catalog, fused, rows):
    scales = {name: _scale(catalog, name) for name in ("importance", "confidence")}
    config = ScoringConfig(weights=settings.weights, half_life_hours=settings.recency_half_life_hours,
                           frequency_midpoint=settings.frequency_midpoint, importance_scale=scales["importance"],
                           confidence_scale=scales["confidence"],
                           value_aware_weight=settings.value_aware_weight if settings.value_aware_enabled else None)
    present = [hit for hit in fused if hit.id in rows]
    utility = learned_utility(workspace=workspace, record_ids=[hit.id for hit in present]) \
        if settings.value_aware_enabled else {}
    candidates = [Candidate(hit.id, hit.rrf, rows[hit.id].occurred_at, rows[hit.id].seq,
                            rows[hit.id].access_count, rows[hit.id].scores.get("importance"),
                            rows[hit.id].scores.get("confidence"), utility.get(hit.id)) for hit in present]
    reference = request.as_of or datetime.now(timezone.utc)
    scored = rescore(candidates, config, reference)
    if request.raw:
        return scored, None, 0
    floor = floor_threshold((s.score for s in scored), ratio=settings.floor_ratio, minimum=settings.floor_minimum)
    kept, dropped = apply_floor(scored, floor)
    return kept, floor, len(dropped)


def _scale(catalog, name: str):
    processor = catalog.value("processor", name)
    return tuple(processor.scale) if processor is not None and processor.scale is not None else None


def _rerank(models, request: RetrieveRequest, ranked, rows, catalog):
    if not request.rerank or not ranked:
        return ranked, {}
    score_names = rendered_score_names(catalog)
    result = rerank(models=models, query=request.query,
                    rows=[render_row_of(rows[scored.id], score_names) for scored in ranked], top_n=RERANK_TOP_N,
                    prompt_limit=memseek_setting("MAX_PROMPT_TOKENS"))
    ordered = [ranked[index] for index in result.order]
    judged = {ordered[position].id: {"score": value} for position, value in enumerate(result.values[:result.judged])}
    return ordered, judged


def _compile(request, scope, catalog, policy_records, final, rows, found, budget):
    score_names = rendered_score_names(catalog)
    confidence_scale = _scale(catalog, "confidence")

    def item(row, scored):
        text, tokens = rendered_row(row, score_names)
        section = section_of(row, scope.policy.policy_collections)
        confidence = scaled(row.scores.get("confidence"), confidence_scale)
        body = entry(row, score=scored.score if scored is not None else None, rendered=text, tokens=tokens,
                     policy=policy_fields(row, catalog, scope.policy),
                     trust=trust(depth=row.depth, ready=row.ready, corroboration=len(found.get(row.id, {})),
                                 confidence=confidence),
                     show_superseded=scope.show_superseded)
        return Item(str(row.id), section, tokens, (body, scored))

    policies = [item(row, None) for row in policy_records]
    ranked = [item(rows[scored.id], scored) for scored in final]
    return compile_sections(policies, ranked, budget=budget)


def _sections(request, compiled, fused, ranked, ordered, found, judged, floor) -> dict:
    """The response's sections: each included entry, with its explanation when asked for."""
    fused_rank = {hit.id: position for position, hit in enumerate(fused, start=1)}
    before = {scored.id: position for position, scored in enumerate(ranked, start=1)}
    after = {scored.id: position for position, scored in enumerate(ordered, start=1)}
    sections = {name: [] for name in SECTIONS}
    for name in SECTIONS:
        for item in compiled.included[name]:
            body, scored = item.payload
            if request.explain and scored is None:
                body["explanation"] = explain.policy_explanation(body["trust"])
            elif request.explain:
                status = explain.reranker_status(mode=request.mode, requested=request.rerank,
                                                 judged=judged.get(scored.id), before=before[scored.id],
                                                 after=after[scored.id])
                body["explanation"] = explain.entry_explanation(
                    found=found.get(scored.id, {}), rank_constant=RANK_CONSTANT, fused_rank=fused_rank[scored.id],
                    scored=scored, floor=floor, reranker=status, trust=body["trust"])
            sections[name].append(body)
    return sections


def _store_receipt(workspace, request: RetrieveRequest, compiled, budget) -> Receipt:
    items = [{"id": item.id, "seq": item.payload[0]["version"]["seq"], "collection": item.payload[0]["collection"],
              "collectionVersion": item.payload[0]["version"]["collectionVersion"], "section": name,
              "tokens": item.tokens}
             for name in SECTIONS for item in compiled.included[name]]
    with primary_write():  # the one write of a read route: the receipt lives on the primary
        return Receipt.objects.create(
            workspace=workspace, request_hash=hashlib.sha256(request.canonical(budget).encode("utf-8")).hexdigest(),
            sections={name: [item.id for item in compiled.included[name]] for name in SECTIONS}, items=items,
            total_tokens=compiled.total_tokens, token_budget=budget, mode=request.mode, raw=request.raw)


class _timer:
    def __init__(self, latency: dict, name: str):
        self.latency, self.name = latency, name

    def __enter__(self):
        self.started = time.perf_counter()

    def __exit__(self, *exc):
        self.latency[self.name] = _ms(self.started)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def _iso(moment):
    return moment.isoformat() if moment is not None else None
