"""Search services used by the API routes (and by retrieval, the SDK and MCP later).

Each takes an optional ``trace`` (``engine.trace``): the benchmarks time the stages and capture
the candidate statements through it; the routes pass none."""
from __future__ import annotations

from catalog_app.catalog.runtime import catalog_for_workspace
from catalog_app.tasks import enqueue_touch
from memseek_site.conf import memseek_setting

from .engine.present import check_response_size, search_payload
from .engine.outcome import SearchOutcome
from .engine.trace import NO_TRACE, Trace
from .pipeline import run_search
from .engine.spec import SearchSpec, parse_search_spec


def search_spec_parse(raw, *, allow_system: bool = True) -> SearchSpec:
    """Parse a SearchSpec body; raises ``SpecError`` (``request_schema``) or ``QueryTooLong``."""
    return parse_search_spec(raw, max_query_chars=memseek_setting("MAX_QUERY_CHARS"), allow_system=allow_system)


def search_execute(*, workspace, spec: SearchSpec, view: bool = False, trace: Trace = NO_TRACE) -> SearchOutcome:
    """Run a parsed search; raises ``ResolveError`` with the code and path of a catalog problem."""
    with trace.stage("catalog lookup"):
        catalog = catalog_for_workspace(workspace)
    return run_search(workspace=workspace, spec=spec, catalog=catalog, view=view, trace=trace)


def search_respond(*, workspace, spec: SearchSpec, outcome: SearchOutcome, backend_as_list: bool = False,
                   extra: dict | None = None, trace: Trace = NO_TRACE) -> dict:
    """The response payload of ``outcome``: rendered, size-checked, and its records touched."""
    with trace.stage("catalog lookup"):
        catalog = catalog_for_workspace(workspace)
    with trace.stage("present"):
        payload = search_payload(outcome, catalog, render_budget=memseek_setting("SEARCH_RENDER_TOKENS"),
                                 backend_as_list=backend_as_list, trace=trace)
    if extra:
        payload = {**extra, **payload}
    with trace.stage("serialize"):
        check_response_size(payload, memseek_setting("MAX_RESPONSE_BYTES"))
    enqueue_touch(hit.row.id for hit in outcome.hits)
    return payload


def search_run(*, workspace, body, trace: Trace = NO_TRACE) -> dict:
    """``POST /search``: parse, run and present one SearchSpec."""
    with trace.stage("parse"):
        spec = search_spec_parse(body)
    outcome = search_execute(workspace=workspace, spec=spec, trace=trace)
    return search_respond(workspace=workspace, spec=spec, outcome=outcome, trace=trace)
