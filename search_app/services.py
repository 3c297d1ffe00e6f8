"""Search services used by the API routes (and by retrieval, the SDK and MCP later)."""
from __future__ import annotations

from catalog_app.catalog.runtime import catalog_for_workspace
from catalog_app.tasks import enqueue_touch
from memseek_site.conf import memseek_setting

from .engine.present import check_response_size, search_payload
from .engine.outcome import SearchOutcome
from .pipeline import run_search
from .engine.spec import SearchSpec, parse_search_spec


def search_spec_parse(raw, *, allow_system: bool = True) -> SearchSpec:
    """Parse a SearchSpec body; raises ``SpecError`` (``request_schema``) or ``QueryTooLong``."""
    return parse_search_spec(raw, max_query_chars=memseek_setting("MAX_QUERY_CHARS"), allow_system=allow_system)


def search_execute(*, workspace, spec: SearchSpec, view: bool = False) -> SearchOutcome:
    """Run a parsed search; raises ``ResolveError`` with the code and path of a catalog problem."""
    return run_search(workspace=workspace, spec=spec, catalog=catalog_for_workspace(workspace), view=view)


def search_respond(*, workspace, spec: SearchSpec, outcome: SearchOutcome, backend_as_list: bool = False,
                   extra: dict | None = None) -> dict:
    """The response payload of ``outcome``: rendered, size-checked, and its records touched."""
    catalog = catalog_for_workspace(workspace)
    payload = search_payload(outcome, catalog, render_budget=memseek_setting("SEARCH_RENDER_TOKENS"),
                             backend_as_list=backend_as_list)
    if extra:
        payload = {**extra, **payload}
    check_response_size(payload, memseek_setting("MAX_RESPONSE_BYTES"))
    enqueue_touch(hit.row.id for hit in outcome.hits)
    return payload


def search_run(*, workspace, body) -> dict:
    """``POST /search``: parse, run and present one SearchSpec."""
    spec = search_spec_parse(body)
    outcome = search_execute(workspace=workspace, spec=spec)
    return search_respond(workspace=workspace, spec=spec, outcome=outcome)

