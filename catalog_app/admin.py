"""The Django admin: a read-only window on workspaces, keys, catalog definitions, audits and
records, plus one mutation — activating a definition version — which goes through
``DefinitionActivation`` exactly like the commands do.

Invariants: nothing is added, changed or deleted here (definitions and records are
immutable; workspaces and keys come from ``create_workspace``); no record page runs a COUNT
over the whole table or sorts it by an unindexed column (a bounded count with the planner's
estimate past it, ``seq`` as the only sort, filters whose choices come from bounded queries).
"""
from __future__ import annotations

import json
from collections import Counter

from django.contrib import admin, messages
from django.contrib.admin.templatetags.admin_urls import admin_urlname
from django.contrib.admin.views.main import ChangeList
from django.core.paginator import Paginator
from django.db import connections
from django.urls import reverse
from django.utils.functional import cached_property
from django.utils.html import format_html, format_html_join

from .models import ActivationAudit, ApiKey, DeadLetter, Definition, ErasureAudit, Record, ReviewAudit, Workspace
from .record_rows import UNREAD_COLUMNS
from .services.activation import ActivationRefused, DefinitionActivation


def _pretty(value) -> str:
    return format_html("<pre>{}</pre>", json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True))


class ReadOnlyAdmin(admin.ModelAdmin):
    """View-only: no add, change or delete, whatever the user's permissions."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Workspace)
class WorkspaceAdmin(ReadOnlyAdmin):
    list_display = ("name", "catalog_revision", "created_at")
    search_fields = ("name",)
    ordering = ("name",)


@admin.register(ApiKey)
class ApiKeyAdmin(ReadOnlyAdmin):
    list_display = ("id", "workspace", "label", "short_hash", "capabilities", "created_at", "revoked_at")
    list_filter = ("workspace",)
    list_select_related = ("workspace",)
    fields = ("id", "workspace", "label", "key_hash", "capabilities", "created_at", "revoked_at")
    readonly_fields = fields
    ordering = ("workspace__name", "created_at")

    @admin.display(description="SHA-256 (first 12)")
    def short_hash(self, key: ApiKey) -> str:
        return key.key_hash[:12]


@admin.register(Definition)
class DefinitionAdmin(ReadOnlyAdmin):
    list_display = ("name", "family", "version", "active", "short_hash", "kind", "reads", "workspace", "loaded_at")
    list_filter = ("family", "active", "workspace")
    search_fields = ("name",)
    list_select_related = ("workspace",)
    ordering = ("workspace__name", "family", "name", "version")
    fields = ("workspace", "family", "name", "version", "active", "hash", "contract_hash", "source_file",
              "loaded_at", "source_yaml", "parsed_body")
    readonly_fields = fields
    actions = ("activate_selected",)

    def get_queryset(self, request):
        # The source YAML is read (one query) only on the detail page.
        return super().get_queryset(request).defer("source_text")

    @admin.display(description="hash")
    def short_hash(self, definition: Definition) -> str:
        return definition.hash[:12]

    @admin.display(description="kind")
    def kind(self, definition: Definition) -> str:
        # A view's kind (search, graph, graph_orphans); a processor's kind (embedding, score, json).
        if definition.family not in ("view", "processor"):
            return ""
        return definition.body.get("kind") or ""

    @admin.display(description="collections read")
    def reads(self, definition: Definition) -> str:
        if definition.family == "view":
            return ", ".join(definition.body.get("collections") or [])
        if definition.family == "processor":
            return ", ".join((definition.body.get("input") or {}).get("collections") or [])
        return ""

    @admin.display(description="source YAML (the file it was loaded from)")
    def source_yaml(self, definition: Definition) -> str:
        return format_html("<pre>{}</pre>", definition.source_text or "(not stored)")

    @admin.display(description="parsed body")
    def parsed_body(self, definition: Definition) -> str:
        return _pretty(definition.body)

    def has_activate_permission(self, request) -> bool:
        # Only the active flag of a definition ever changes, so "change definition" is the right to activate.
        return request.user.has_perm("catalog_app.change_definition")

    @admin.action(description="Activate selected version", permissions=["activate"])
    def activate_selected(self, request, queryset):
        chosen = list(queryset.select_related("workspace").defer("source_text"))
        per_name = Counter((d.workspace_id, d.family, d.name) for d in chosen)
        doubled = sorted(f"{family} {name}" for (_, family, name), count in per_name.items() if count > 1)
        if doubled:
            self.message_user(request, f"Select one version per name; several were selected for {', '.join(doubled)}. "
                              "Nothing was activated.", messages.ERROR)
            return
        for definition in chosen:
            label = f"{definition.family} {definition.name}@{definition.version} in {definition.workspace.name}"
            activation = DefinitionActivation(workspace=definition.workspace, family=definition.family,
                                              name=definition.name, version=definition.version,
                                              actor=request.user.get_username())
            try:
                activation.check()
                audit = activation.execute()
            except ActivationRefused as refused:
                self.message_user(request, f"Not activated: {refused.message}", messages.ERROR)
                continue
            was = f"@{audit.from_version}" if audit.from_version is not None else "no active version"
            self.message_user(request, f"Activated {label} (was {was}).", messages.SUCCESS)


@admin.register(ActivationAudit)
class ActivationAuditAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "workspace", "family", "name", "from_version", "to_version", "actor")
    list_filter = ("workspace", "family")
    search_fields = ("name", "actor")
    list_select_related = ("workspace",)
    date_hierarchy = "created_at"


@admin.register(ErasureAudit)
class ErasureAuditAdmin(ReadOnlyAdmin):
    """Erasures (docs/forget.md): who, when and how many rows of what; never what was erased."""

    list_display = ("created_at", "workspace", "kind", "collection", "actor_key_id", "counts")
    list_filter = ("workspace", "kind")
    list_select_related = ("workspace",)
    date_hierarchy = "created_at"


@admin.register(DeadLetter)
class DeadLetterAdmin(ReadOnlyAdmin):
    """Tasks that failed for good (docs/queues.md): read here, acted on by an operator."""

    list_display = ("created_at", "task_name", "queue", "tries", "error")
    list_filter = ("task_name", "queue")
    search_fields = ("task_id",)
    date_hierarchy = "created_at"


@admin.register(ReviewAudit)
class ReviewAuditAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "workspace", "action", "draft_id", "record_id", "actor")
    list_filter = ("workspace", "action")
    search_fields = ("actor",)
    list_select_related = ("workspace",)
    fields = ("created_at", "workspace", "action", "draft_link", "record_link", "actor")
    readonly_fields = fields

    @admin.display(description="draft")
    def draft_link(self, audit: ReviewAudit) -> str:
        return _record_link(audit.draft_id)

    @admin.display(description="written record")
    def record_link(self, audit: ReviewAudit) -> str:
        return _record_link(audit.record_id)


def _record_link(record_id) -> str:
    url = reverse(admin_urlname(Record._meta, "change"), args=[record_id])
    return format_html('<a href="{}">{}</a>', url, record_id)


# --- Records ---------------------------------------------------------------------------------

class BoundedCountPaginator(Paginator):
    """Counts exactly up to ``EXACT_LIMIT`` rows (a COUNT over a LIMIT subquery); past that it
    takes the planner's row estimate, so a page never counts a huge table."""

    EXACT_LIMIT = 10_000

    @cached_property
    def count(self) -> int:
        queryset = self.object_list.order_by()
        exact = queryset[: self.EXACT_LIMIT + 1].count()
        if exact <= self.EXACT_LIMIT:
            return exact
        return max(exact, _planner_rows(queryset))


def _planner_rows(queryset) -> int:
    sql, params = queryset.query.sql_with_params()
    with connections[queryset.db].cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
        plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    return int(plan[0]["Plan"]["Plan Rows"])


class _ChoiceFilter(admin.SimpleListFilter):
    """A filter on one column whose choices come from ``choices()``; any value in the URL still
    filters, so a choice missing from a bounded list can be typed in."""

    field: str

    def lookups(self, request, model_admin):
        values = list(self.values())
        if self.value() and self.value() not in values:
            values.append(self.value())
        return [(value, value) for value in values]

    def values(self):
        raise NotImplementedError

    def queryset(self, request, queryset):
        return queryset.filter(**{self.field: self.value()}) if self.value() else queryset


class CollectionFilter(_ChoiceFilter):
    title = "collection"
    parameter_name = "collection"
    field = "collection"

    def values(self):
        names = Definition.objects.filter(family="collection").order_by("name").values_list("name", flat=True)
        return [*dict.fromkeys(names), "_system"]


class TypeFilter(_ChoiceFilter):
    """Record types are the authors' vocabulary; the choices are the types of the newest
    ``SAMPLE`` records (an index scan on ``seq``), never a DISTINCT over the table."""

    title = "type"
    parameter_name = "type"
    field = "type"
    SAMPLE = 1000

    def values(self):
        newest = Record.objects.order_by("-seq").values_list("type", flat=True)[: self.SAMPLE]
        return sorted(set(newest))


class StatusFilter(_ChoiceFilter):
    title = "status"
    parameter_name = "status"
    field = "status"

    def values(self):
        return ["active", "draft"]


class ReadinessFilter(admin.SimpleListFilter):
    title = "readiness"
    parameter_name = "ready"

    def lookups(self, request, model_admin):
        return [("yes", "ready"), ("no", "not ready (enriching)")]

    def queryset(self, request, queryset):
        if self.value() in ("yes", "no"):
            return queryset.filter(enriched_at__isnull=self.value() == "no")
        return queryset


class RecordChangeList(ChangeList):
    # The list shows none of the large JSON columns.
    LIST_DEFERRED = ("content", "scores", "annotations", "annotation_meta", "enrichment_error", "bm25_tf",
                     "en_tf", "search_vector")

    def get_queryset(self, request, exclude_parameters=None):
        return super().get_queryset(request, exclude_parameters).defer(*self.LIST_DEFERRED)


@admin.register(Record)
class RecordAdmin(ReadOnlyAdmin):
    list_display = ("seq", "short_id", "workspace", "entity", "collection_version_label", "type", "key", "status",
                    "ready", "tombstone", "text_preview", "created_at")
    list_display_links = ("seq", "short_id")
    list_filter = ("workspace", CollectionFilter, TypeFilter, StatusFilter, ReadinessFilter, "tombstone")
    list_select_related = ("workspace",)
    date_hierarchy = "created_at"
    list_per_page = 50
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER
    ordering = ("-seq",)
    sortable_by = ("seq",)
    paginator = BoundedCountPaginator
    fields = ("id", "seq", "workspace", "entity", "collection", "collection_version", "collection_hash", "type",
              "key", "status", "tombstone", "text", "content_pretty", "scores_pretty", "annotations_pretty",
              "annotation_meta_pretty", "enrichment_error_pretty", "ready", "enriched_at", "depth", "parents",
              "run_id", "dedupe_key", "occurred_at", "created_at", "last_accessed")
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).defer(*UNREAD_COLUMNS)

    def get_changelist(self, request, **kwargs):
        return RecordChangeList

    @admin.display(description="id")
    def short_id(self, record: Record) -> str:
        return str(record.id)[:8]

    @admin.display(description="collection")
    def collection_version_label(self, record: Record) -> str:
        return f"{record.collection}@{record.collection_version}"

    @admin.display(description="ready", boolean=True)
    def ready(self, record: Record) -> bool:
        return record.ready

    @admin.display(description="text")
    def text_preview(self, record: Record) -> str:
        return record.text if len(record.text) <= 80 else record.text[:79] + "…"

    @admin.display(description="content")
    def content_pretty(self, record: Record) -> str:
        return _pretty(record.content)

    @admin.display(description="scores")
    def scores_pretty(self, record: Record) -> str:
        return _pretty(record.scores)

    @admin.display(description="annotations")
    def annotations_pretty(self, record: Record) -> str:
        return _pretty(record.annotations)

    @admin.display(description="annotation meta")
    def annotation_meta_pretty(self, record: Record) -> str:
        return _pretty(record.annotation_meta)

    @admin.display(description="enrichment error")
    def enrichment_error_pretty(self, record: Record) -> str:
        return _pretty(record.enrichment_error)

    @admin.display(description="derived from")
    def parents(self, record: Record) -> str:
        return format_html_join(", ", "{}", ((_record_link(parent),) for parent in record.derived_from)) or "—"
