"""Listing views and running one by name."""
from __future__ import annotations

from catalog_app.catalog.runtime import catalog_for_workspace
from memseek_site.conf import memseek_setting
from memseek_site.errors import ApiError

from ..engine.spec import SpecError, parse_search_spec
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


def view_query(*, workspace, name: str, body, trace: Trace = NO_TRACE) -> dict:
    """Run the active version of view ``name`` with the parameters in ``body``; a search view's
    stages are reported to ``trace`` (``engine.trace``)."""
    catalog = catalog_for_workspace(workspace)
    definition = catalog.get("view", name)
    if definition is None:
        raise ApiError("view_not_found", f"No active view named {name!r}; GET /views lists them.", path="name")
    view: View = definition.value
    parameters = bind_parameters(view.parameters, body)
    wrapper = {"view": {"name": view.name, "version": view.version, "hash": definition.hash},
               "parameters": parameters}
    if view.kind != "search":
        from ..graph.service import graph_view_run

        return graph_view_run(workspace=workspace, catalog=catalog, view=view, parameters=parameters,
                              wrapper=wrapper)
    try:
        spec = parse_search_spec(fill_template(dict(view.query), parameters),
                                 max_query_chars=memseek_setting("MAX_QUERY_CHARS"), allow_system=True)
    except SpecError as error:
        raise error.prefixed("the filled view query is invalid", code="search_spec") from None
    outcome = search_execute(workspace=workspace, spec=spec, view=True, trace=trace)
    payload = search_respond(workspace=workspace, spec=spec, outcome=outcome, backend_as_list=True, extra=wrapper,
                             trace=trace)
    payload["input_record_ids"] = [hit["id"] for hit in payload["hits"]]
    payload.pop("rerank", None)
    payload.pop("graph_boost", None)
    return _ordered(payload)


_ORDER = ("view", "parameters", "hits", "ranking", "input_record_ids", "rendered", "truncated", "profiles", "backend")


def _ordered(payload: dict) -> dict:
    return {key: payload[key] for key in _ORDER if key in payload}

