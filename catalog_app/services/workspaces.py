"""Creating workspaces and their bearer keys."""
from __future__ import annotations

import re

from django.db import transaction

from memseek_site.errors import ApiError

from ..auth import generate_key
from ..models import ApiKey, Workspace, WORKSPACE_NAME_PATTERN

_NAME = re.compile(WORKSPACE_NAME_PATTERN)


class WorkspaceExists(ApiError):
    codes = ("workspace_exists",)


@transaction.atomic
def workspace_create(*, name: str) -> tuple[Workspace, str]:
    """Create workspace ``name`` with one key; return it and the key (shown only this once).

    Raises ``ValueError`` for a bad name and ``WorkspaceExists`` if the name is taken.
    """
    if not _NAME.fullmatch(name):
        raise ValueError(f"workspace name {name!r} must match {WORKSPACE_NAME_PATTERN}")
    if Workspace.objects.filter(name=name).exists():
        raise WorkspaceExists("workspace_exists", f"workspace {name!r} already exists")
    workspace = Workspace.objects.create(name=name)
    key = api_key_create(workspace=workspace)
    return workspace, key


def api_key_create(*, workspace: Workspace, label: str = "") -> str:
    """Add a key to ``workspace``; returns the key. Only its SHA-256 is stored."""
    key, digest = generate_key()
    ApiKey.objects.create(workspace=workspace, key_hash=digest, label=label)
    return key
