"""The operator console's catalog screens: workspaces, draft review, the record browser, the
record page, the definitions list and the workspace's keys.

Thin: each view parses its request, calls one service or selector and renders a template.
Invariants: staff only (``staff_member_required``); every mutation is a POST under Django's
CSRF middleware, goes through ``draft_approve`` / ``draft_reject`` (exactly what
``POST /records/{id}/approve`` and ``/reject`` call) or ``api_key_revoke`` (what
``manage.py revoke_key`` calls) and redirects back (post/redirect/get);
another workspace's record is a 404; every list is paginated and bounded.
"""
from __future__ import annotations

import json
import uuid
from datetime import datetime
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.admin.templatetags.admin_urls import admin_urlname
from django.contrib.admin.views.decorators import staff_member_required
from django.core.paginator import Paginator
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.html import format_html
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from memseek_site.conf import memseek_setting
from memseek_site.errors import ApiError

from ..catalog.registry import builtin_default_warnings
from ..catalog.runtime import catalog_for_workspace
from ..embedding_serving import switch_progress
from ..models import ApiKey, Definition, Workspace
from ..selectors import SYSTEM_COLLECTION
from ..selectors_review import draft_slots
from ..services.review import draft_approve, draft_reject
from ..services.workspaces import api_key_revoke
from .forms import RecordFilterForm
from .selectors import definition_summary, definitions_for_console, record_detail, record_page

WORKSPACES_PER_PAGE = 25
DEFINITIONS_PER_PAGE = 25
DRAFT_SLOTS_PER_PAGE = 10


def workspace_of(name: str) -> Workspace:
    """The workspace named ``name`` or a 404."""
    return get_object_or_404(Workspace, name=name)


def _positive_int(value, default: int = 1) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return default
    return number if number >= 1 else default


@staff_member_required
@require_GET
def console_index(request):
    workspaces = Paginator(Workspace.objects.order_by("name"), WORKSPACES_PER_PAGE)
    page = workspaces.get_page(request.GET.get("page"))
    return render(request, "console/index.html", {"page": page, "tab": "workspaces", "switches": switch_progress()})


@staff_member_required
@require_GET
def drafts(request, workspace: str):
    ws = workspace_of(workspace)
    entity = request.GET.get("entity", "").strip() or None
    page = _positive_int(request.GET.get("page"))
    slots = draft_slots(workspace=ws, entity=entity, page=page, per_page=DRAFT_SLOTS_PER_PAGE)
    for group in slots["entities"]:
        group["slots"] = [_present_slot(slot) for slot in group["slots"]]
    return render(request, "console/drafts.html", {"workspace": ws, "entity": entity or "", "slots": slots,
                                                   "here": request.get_full_path(), "tab": "drafts"})


def _present_slot(slot: dict) -> dict:
    """Add what the template shows but cannot compute: classed diff lines, JSON of changes."""
    slot["diff_lines"] = [(_diff_class(line), line + "\n") for line in slot["diff"]["text"].splitlines()
                          if not line.startswith(("--- ", "+++ "))]
    slot["draft_written"] = datetime.fromisoformat(slot["draft"]["created_at"])
    slot["changes"] = [{**change, "active_json": _json(change["active"]), "draft_json": _json(change["draft"])}
                       for change in slot["diff"]["content"]]
    return slot


def _diff_class(line: str) -> str:
    return {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "")


def _json(value) -> str:
    return "—" if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)


@staff_member_required
@require_POST
def draft_decide(request, workspace: str, record_id: uuid.UUID, decision: str):
    """Approve or reject one draft, then go back to the page the form was on."""
    ws = workspace_of(workspace)
    decide = {"approve": draft_approve, "reject": draft_reject}[decision]
    try:
        written = decide(workspace=ws, draft_id=record_id, actor=request.user.get_username())
    except ApiError as error:
        messages.error(request, format_html("Not {}: <code>{}</code> — {}", _past(decision), error.code,
                                            error.detail))
    else:
        link = reverse("console:record", args=[ws.name, written.id])
        what = "active successor" if decision == "approve" else "withdrawal"
        messages.success(request, format_html("Draft {} {}; wrote {} <a href=\"{}\">{}</a>.", str(record_id)[:8],
                                              _past(decision), what, link, str(written.id)[:8]))
    back = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()},
                                           require_https=request.is_secure()):
        back = reverse("console:drafts", args=[ws.name])
    return HttpResponseRedirect(back)


def _past(decision: str) -> str:
    return {"approve": "approved", "reject": "rejected"}[decision]


@staff_member_required
@require_GET
def records(request, workspace: str):
    ws = workspace_of(workspace)
    collections = [d.name for d in catalog_for_workspace(ws).all("collection")]
    form = RecordFilterForm(request.GET, collections=list(dict.fromkeys(collections)) + [SYSTEM_COLLECTION])
    page = None
    # An unreadable filter shows its error and no rows: it never silently widens the list.
    if form.is_valid():
        data = form.cleaned_data
        page = record_page(workspace=ws, filters=form.filters(), per_page=data["per_page"],
                           before_seq=data.get("before_seq"), after_seq=data.get("after_seq"))
    return render(request, "console/records.html", {"workspace": ws, "form": form, "page": page,
                                                    "links": _page_links(form, page), "tab": "records"})


def _page_links(form: RecordFilterForm, page) -> dict:
    """Query strings of the newest, newer and older pages, filters kept."""
    if page is None:
        return {}
    query = form.query_without_cursor()
    links = {"newest": "?" + urlencode(query)}
    if page.newer_than is not None:
        links["newer"] = "?" + urlencode({**query, "after_seq": page.newer_than})
    if page.older_than is not None:
        links["older"] = "?" + urlencode({**query, "before_seq": page.older_than})
    return links


@staff_member_required
@require_GET
def record(request, workspace: str, record_id: uuid.UUID):
    ws = workspace_of(workspace)
    detail = record_detail(workspace=ws, record_id=record_id)
    if detail is None:
        raise Http404("No such record in this workspace.")
    found = detail["record"]
    pretty = {name: json.dumps(getattr(found, name), indent=2, ensure_ascii=False, sort_keys=True)
              for name in ("content", "scores", "annotations", "annotation_meta", "enrichment_error")}
    return render(request, "console/record.html", {"workspace": ws, "tab": "records", "pretty": pretty, **detail})


@staff_member_required
@require_GET
def definitions(request, workspace: str):
    ws = workspace_of(workspace)
    page = Paginator(definitions_for_console(workspace=ws), DEFINITIONS_PER_PAGE).get_page(request.GET.get("page"))
    rows = [{"definition": d, **definition_summary(d)} for d in page.object_list]
    admin_list = reverse(admin_urlname(Definition._meta, "changelist"))
    # Built-in defaults a family warns about (the engine's built-in rank formula), said above the list.
    warnings = builtin_default_warnings(catalog_for_workspace(ws))
    return render(request, "console/definitions.html", {"workspace": ws, "page": page, "rows": rows,
                                                        "admin_list": admin_list, "tab": "definitions",
                                                        "builtin_warnings": warnings})


@staff_member_required
@require_GET
def keys(request, workspace: str):
    ws = workspace_of(workspace)
    found = ApiKey.objects.filter(workspace=ws).order_by("revoked_at", "-created_at", "-pk")
    return render(request, "console/keys.html", {"workspace": ws, "keys": found, "tab": "keys"})


@staff_member_required
@require_POST
def key_revoke(request, workspace: str, key_id: int):
    """Revoke one key of the workspace; another workspace's key is a 404."""
    ws = workspace_of(workspace)
    key = get_object_or_404(ApiKey, workspace=ws, pk=key_id)
    if api_key_revoke(key=key):
        messages.success(request, format_html("Key {} ({}) revoked; every process refuses it within {} s.", key.pk,
                                              key.key_hash[:12], memseek_setting("API_KEY_CACHE_TTL_S")))
    else:
        messages.info(request, format_html("Key {} was already revoked.", key.pk))
    return HttpResponseRedirect(reverse("console:keys", args=[ws.name]))
