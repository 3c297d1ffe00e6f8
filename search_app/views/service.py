"""Listing views and running one by name."""
from __future__ import annotations

from dataclasses import dataclass

from catalog_app.catalog.runtime import catalog_for_workspace
from memseek_site.conf import memseek_setting
from memseek_site.errors import ApiError

from ..engine.outcome import SearchOutcome
from ..engine.spec import SearchSpec, SpecError, parse_search_spec
from ..engine.trace import NO_TRACE, Trace
from ..services import search_execute, search_respond
from .definitions import View
from .parameters import bind_parameters, input_schema, parameters_summary
from .templating import fill_template


def view_list(*, workspace) -> list[dict]:
    """Every loaded version of every view, with its input contract."""
    catalog = catalog_for_workspace(workspace)
    return [_describe(definition, catalog) for definition in catalog.all("view")]


def _describe(definition, catalog) -> dict:
    view: View = definition.value
    profiles = sorted({(catalog.value("collection", name) or catalog.versions("collection", name)[-1].value)
                       .search_profile for name in view.collections})
    graph = None
    if view.graph is not None:
        graph = {"edges": view.graph.edges, "subject": view.graph.subject, "object": view.graph.object,
                 "predicate": view.graph.predicate, "nodes": view.graph.nodes}
    return {"name": view.name, "version": view.version, "hash": definition.hash, "active": definition.active,
            "kind": view.kind, "graph": graph, "parameters": parameters_summary(view.parameters),
            "input_schema": input_schema(view.parameters), "collections": list(view.collections),
            "required_capabilities": list(view.required_capabilities), "profiles": profiles}


def view_definition(catalog, name: str, *, path: str):
    """The active version of view ``name`` (its catalog definition); ``404 view_not_found`` at
    ``path`` when there is none."""
    definition = catalog.get("view", name)
    if definition is None:
        raise ApiError("view_not_found", f"No active view named {name!r}; GET /views lists them.", path=path)
    return definition


@dataclass(frozen=True, slots=True)
class ViewRun:
    """One run of a view with bound parameters, before a response is shaped: a graph view's
    finished payload, or a search view's spec and engine outcome (no record touched yet)."""

    graph_payload: dict | None = None
    spec: SearchSpec | None = None
    outcome: SearchOutcome | None = None

    @property
    def hit_ids(self) -> list[str]:
        if self.graph_payload is not None:
            return [str(hit["id"]) for hit in self.graph_payload["hits"]]
        assert self.outcome is not None
        return [str(hit.row.id) for hit in self.outcome.hits]


def view_run(*, workspace, catalog, view: View, parameters: dict, wrapper: dict,
             invalid: str = "the filled view query is invalid", trace: Trace = NO_TRACE) -> ViewRun:
    """Run ``view`` with its bound ``parameters``: a graph or orphan view through
    ``graph_view_run`` (``wrapper`` heads its payload), a search view's filled query through the
    engine. A filled query that is not a valid SearchSpec is ``search_spec``, its message led by
    ``invalid``; ``QueryTooLong`` passes through for the caller to place."""
    if view.kind != "search":
        from ..graph.service import graph_view_run

        return ViewRun(graph_payload=graph_view_run(workspace=workspace, catalog=catalog, view=view,
                                                    parameters=parameters, wrapper=wrapper))
    try:
        spec = parse_search_spec(fill_template(dict(view.query), parameters),
                                 max_query_chars=memseek_setting("MAX_QUERY_CHARS"), allow_system=True)
    except SpecError as error:
        raise error.prefixed(invalid, code="search_spec") from None
    return ViewRun(spec=spec, outcome=search_execute(workspace=workspace, spec=spec, view=True, trace=trace))


def view_query(*, workspace, name: str, body, trace: Trace = NO_TRACE) -> dict:
    """Run the active version of view ``name`` with the parameters in ``body``; a search view's
    stages are reported to ``trace`` (``engine.trace``)."""
    catalog = catalog_for_workspace(workspace)
    definition = view_definition(catalog, name, path="name")
    view: View = definition.value
    parameters = bind_parameters(view.parameters, body)
    wrapper = {"view": {"name": view.name, "version": view.version, "hash": definition.hash},
               "parameters": parameters}
    run = view_run(workspace=workspace, catalog=catalog, view=view, parameters=parameters, wrapper=wrapper,
                   trace=trace)
    if run.graph_payload is not None:
        return run.graph_payload
    assert run.spec is not None and run.outcome is not None
    payload = search_respond(workspace=workspace, spec=run.spec, outcome=run.outcome, backend_as_list=True,
                             extra=wrapper, trace=trace)
    payload["input_record_ids"] = [hit["id"] for hit in payload["hits"]]
    payload.pop("rerank", None)
    payload.pop("graph_boost", None)
    return _ordered(payload)


_ORDER = ("view", "parameters", "hits", "ranking", "input_record_ids", "rendered", "truncated", "profiles", "backend")


def _ordered(payload: dict) -> dict:
    return {key: payload[key] for key in _ORDER if key in payload}

