"""Turning a search outcome into the response payload: hits with only what was asked for,
the ranking contract, the rendered block, backend diagnostics, and the size bound."""
from __future__ import annotations

import json

from catalog_app.catalog.registry import Catalog
from catalog_app.text import truncate_middle
from memseek_site.errors import ApiError

from .recheck import raw_value
from .render import render_rows
from .rendered_rows import render_row_of, rendered_score_names
from .outcome import Hit, SearchOutcome
from .trace import NO_TRACE, Trace

INCLUDE_TEXT_LIMIT = 2000


def search_payload(outcome: SearchOutcome, catalog: Catalog, *, render_budget: int,
                   backend_as_list: bool = False, trace: Trace = NO_TRACE) -> dict:
    """The ``POST /search`` body for ``outcome`` (without size checking); the token fitting of the
    rendered block is ``trace``'s ``render`` stage."""
    spec = outcome.spec
    hits = [_hit(position, hit, outcome) for position, hit in enumerate(outcome.hits, start=1)]
    rendered, truncated = None, False
    if spec.render:
        names = rendered_score_names(catalog)
        rows = [render_row_of(hit.row, names) for hit in outcome.hits]
        with trace.stage("render"):
            result = render_rows(rows, budget_tokens=render_budget, fence=spec.fence)
        rendered, truncated = result.text, result.truncated
    backend = [{"source": run.resolved.source.name, "name": run.resolved.backend, "layout": None,
                "candidate_count": run.candidate_count} for run in outcome.sources]
    if not spec.fused:
        for entry in backend:
            del entry["source"]
    payload = {"hits": hits, "ranking": outcome.ranking, "rendered": rendered, "truncated": truncated,
               "backend": backend if (spec.fused or backend_as_list) else backend[0],
               "profiles": list(outcome.profiles)}
    payload.update(outcome.diagnostics)
    return payload


def check_response_size(payload: dict, limit: int) -> None:
    """Raise ``409 response_too_large`` when the serialised payload exceeds ``limit`` bytes."""
    size = len(json.dumps(payload, separators=(",", ":"), default=str).encode("utf-8"))
    if size > limit:
        raise ApiError("response_too_large", f"The response would be {size} bytes; the limit is {limit}. "
                       "Reduce k, include, fields or annotations.")


def _hit(position: int, hit: Hit, outcome: SearchOutcome) -> dict:
    spec = outcome.spec
    row = hit.row
    result = {"id": str(row.id), "rank": position, "score": hit.score}
    if hit.rank_score is not None:
        result["rank_score"] = hit.rank_score
    if hit.source_ranks is not None:
        result["source_ranks"] = hit.source_ranks
    for name in spec.include:
        result[name] = _included(name, row)
    if spec.fields:
        resolved = _source_of(outcome, row)
        result["fields"] = {name: raw_value(row, resolved.access(name, row.collection, row.collection_version))
                            for name in spec.fields}
    if spec.annotations:
        result["annotations"] = {name: row.annotations.get(name) for name in spec.annotations}
    return result


def _source_of(outcome: SearchOutcome, row):
    for run in outcome.sources:
        if any(collection.name == row.collection and collection.version == row.collection_version
               for collection in run.resolved.versions):
            return run.resolved
    raise LookupError(f"no source reaches {row.collection}@{row.collection_version}")


def _included(name: str, row):
    if name == "text":
        return truncate_middle(row.text, INCLUDE_TEXT_LIMIT)
    if name in ("occurred_at", "created_at"):
        return getattr(row, name).isoformat()
    if name == "run_id":
        return str(row.run_id) if row.run_id else None
    return getattr(row, name)
