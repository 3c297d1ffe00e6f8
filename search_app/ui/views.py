"""The search playground: pick a view and fill its parameters, or write a SearchSpec, run it as
the workspace, and see the response exactly as an agent gets it.

Thin: the view list comes from ``view_list`` (``GET /views``), a view runs through
``view_query`` (``POST /views/{name}/query``) and a SearchSpec through ``search_run``
(``POST /search``); the page shows their payload unchanged (the rendered block byte for byte)
or their ``ApiError`` (code, path, detail). Staff only; a run is a CSRF-protected POST.
"""
from __future__ import annotations

import json

from django.contrib.admin.views.decorators import staff_member_required
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_http_methods

from catalog_app.models import Record, Workspace
from memseek_site.errors import ApiError

from ..services import search_run
from ..views.service import view_list, view_query
from .forms import ParameterForm

SPEC_EXAMPLE = {"q": "what changed recently", "mode": "hybrid", "k": 10, "include": ["text", "occurred_at"],
                "render": True}
MAX_SPEC_CHARS = 100_000


@staff_member_required
@require_http_methods(["GET", "POST"])
def playground(request, workspace: str):
    ws = get_object_or_404(Workspace, name=workspace)
    views = view_list(workspace=ws)
    runnable = [view for view in views if view["active"]]
    data = request.POST if request.method == "POST" else request.GET
    mode = "spec" if data.get("mode") == "spec" else "view"
    chosen = next((view for view in runnable if view["name"] == data.get("view")), runnable[0] if runnable else None)
    form = ParameterForm(data if request.method == "POST" and mode == "view" else None,
                         schema=chosen["input_schema"]) if chosen else None
    spec_text = data.get("spec") or json.dumps(SPEC_EXAMPLE, indent=2)
    result = error = request_body = None
    if request.method == "POST":
        try:
            if mode == "view" and chosen is not None:
                form.is_valid()
                request_body = form.parameters()
                result = view_query(workspace=ws, name=chosen["name"], body=request_body)
            elif mode == "spec":
                request_body = _parse_spec(spec_text)
                result = search_run(workspace=ws, body=request_body)
        except ApiError as raised:
            error = raised.envelope()
    context = {
        "workspace": ws, "tab": "playground", "views": views, "runnable": runnable, "chosen": chosen,
        "form": form, "mode": mode, "spec_text": spec_text, "result": result, "error": error,
        "request_json": json.dumps(request_body, indent=2, ensure_ascii=False) if request_body is not None else "",
        "endpoint": (f"POST /views/{chosen['name']}/query" if mode == "view" and chosen else "POST /search"),
    }
    if result is not None:
        context.update(_result_context(ws, result))
    return render(request, "console/playground.html", context)


def _parse_spec(text: str):
    if len(text) > MAX_SPEC_CHARS:
        raise ApiError("request_schema", f"The SearchSpec is longer than {MAX_SPEC_CHARS} characters.")
    try:
        return json.loads(text)
    except json.JSONDecodeError as problem:
        raise ApiError("invalid_json", f"The SearchSpec is not valid JSON: {problem.msg} at line {problem.lineno}, "
                       f"column {problem.colno}.") from None


def _result_context(ws: Workspace, result: dict) -> dict:
    hits = result.get("hits") or []
    # Hits carry only what the spec included; the table also names each hit's record (one query).
    known = {str(row["id"]): row for row in Record.objects.filter(workspace=ws, id__in=[h["id"] for h in hits])
             .values("id", "entity", "collection", "key", "text")}
    rows = [{"hit": hit, "record": known.get(hit["id"]),
             "extras": {k: v for k, v in hit.items() if k not in ("id", "rank", "score", "rank_score",
                                                                  "source_ranks", "text")}} for hit in hits]
    return {
        "rows": rows,
        "ranking_json": json.dumps(result.get("ranking"), indent=2, ensure_ascii=False),
        "response_json": json.dumps(result, indent=2, ensure_ascii=False),
    }
