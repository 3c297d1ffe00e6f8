"""Writing a workspace's ``retrieval.*`` setting overrides and its ``limits.*`` rate limits and
quotas (``catalog_app.limits``) (``manage.py workspace_setting``).

A write is checked as the whole effective settings it would produce (``settings_from`` and
``workspace_limits``),
so a stored override can never make ``retrieval_settings`` fail later: a wrong type, range or
name is refused and nothing is written. The row is locked while it is read and written, so two
concurrent writes of different names both land.
"""
from __future__ import annotations

from django.db import transaction

from catalog_app.limits import SETTING_NAMES as LIMIT_SETTINGS
from catalog_app.limits import workspace_limits
from catalog_app.models import Workspace

from .settings import DEFAULTS, settings_from


@transaction.atomic
def workspace_setting_set(*, workspace_name: str, name: str, value) -> dict:
    """Store ``name = value`` for the workspace; returns the stored overrides. Raises
    ``Workspace.DoesNotExist``, ``KeyError`` (unknown name) and ``ApiError('workspace_setting')``."""
    if name not in DEFAULTS and name not in LIMIT_SETTINGS:
        raise KeyError(f"unknown setting {name!r}; known: {', '.join(sorted((*DEFAULTS, *LIMIT_SETTINGS)))}")
    workspace = Workspace.objects.select_for_update().get(name=workspace_name)
    stored = {**(workspace.settings or {}), name: value}
    settings_from(stored)
    workspace_limits(stored)
    workspace.settings = stored
    workspace.save(update_fields=["settings"])
    return stored


@transaction.atomic
def workspace_setting_unset(*, workspace_name: str, name: str) -> dict:
    """Remove the override of ``name`` (the documented default applies again)."""
    workspace = Workspace.objects.select_for_update().get(name=workspace_name)
    stored = {key: value for key, value in (workspace.settings or {}).items() if key != name}
    workspace.settings = stored
    workspace.save(update_fields=["settings"])
    return stored
