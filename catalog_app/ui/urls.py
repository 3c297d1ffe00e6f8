"""Operator console routes of catalog_app. ``memseek_site.urls`` mounts them under ``/console/`` in
the one ``console`` URL namespace, beside search_app's playground."""
from django.urls import path

from . import operations, views

urlpatterns = [
    path("", views.console_index, name="index"),
    path("operations", operations.operations, name="operations"),
    path("<str:workspace>/drafts", views.drafts, name="drafts"),
    path("<str:workspace>/drafts/<uuid:record_id>/approve", views.draft_decide, {"decision": "approve"},
         name="draft-approve"),
    path("<str:workspace>/drafts/<uuid:record_id>/reject", views.draft_decide, {"decision": "reject"},
         name="draft-reject"),
    path("<str:workspace>/records", views.records, name="records"),
    path("<str:workspace>/records/<uuid:record_id>", views.record, name="record"),
    path("<str:workspace>/definitions", views.definitions, name="definitions"),
    path("<str:workspace>/keys", views.keys, name="keys"),
    path("<str:workspace>/keys/<int:key_id>/revoke", views.key_revoke, name="key-revoke"),
]
