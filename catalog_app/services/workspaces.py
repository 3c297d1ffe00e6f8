"""Creating workspaces, minting their bearer keys with chosen capabilities, revoking keys."""
from __future__ import annotations

import re
from collections.abc import Iterable

from django.db import transaction
from django.utils import timezone

from memseek_site.errors import ApiError

from ..auth import generate_key
from ..models import CAPABILITIES, ApiKey, Workspace, WORKSPACE_NAME_PATTERN

_NAME = re.compile(WORKSPACE_NAME_PATTERN)
# The shortest key prefix revoke_key accepts: shorter ones name keys by accident.
MIN_KEY_PREFIX = 8


class WorkspaceExists(ApiError):
    codes = ("workspace_exists",)


class KeyNotFound(ApiError):
    codes = ("key_not_found", "key_ambiguous")


@transaction.atomic
def workspace_create(*, name: str, capabilities: Iterable[str] = CAPABILITIES) -> tuple[Workspace, str]:
    """Create workspace ``name`` with one key; return it and the key (shown only this once).

    Raises ``ValueError`` for a bad name or capability and ``WorkspaceExists`` if the name is taken.
    """
    if not _NAME.fullmatch(name):
        raise ValueError(f"workspace name {name!r} must match {WORKSPACE_NAME_PATTERN}")
    if Workspace.objects.filter(name=name).exists():
        raise WorkspaceExists("workspace_exists", f"workspace {name!r} already exists")
    workspace = Workspace.objects.create(name=name)
    key = api_key_create(workspace=workspace, capabilities=capabilities)
    return workspace, key


def api_key_create(*, workspace: Workspace, label: str = "", capabilities: Iterable[str] = CAPABILITIES) -> str:
    """Add a key holding ``capabilities`` to ``workspace``; returns the key. Only its SHA-256 is
    stored. Raises ``ValueError`` for an empty set or an unknown capability."""
    chosen = set(capabilities)
    if not chosen or not chosen <= set(CAPABILITIES):
        raise ValueError(f"capabilities must be a non-empty subset of {', '.join(CAPABILITIES)}, "
                         f"not {', '.join(sorted(chosen)) or 'nothing'}")
    key, digest = generate_key()
    ApiKey.objects.create(workspace=workspace, key_hash=digest, label=label,
                          capabilities=[name for name in CAPABILITIES if name in chosen])
    return key


def api_key_find(*, ref: str) -> ApiKey:
    """The key named by ``ref``: its numeric id, or a prefix (at least ``MIN_KEY_PREFIX`` hex
    characters) of its SHA-256. Raises ``KeyNotFound`` when none or several match."""
    ref = ref.strip().lower()
    if ref.isdigit():
        matches = list(ApiKey.objects.filter(pk=int(ref)).select_related("workspace")[:2])
    elif len(ref) >= MIN_KEY_PREFIX and re.fullmatch(r"[0-9a-f]+", ref):
        matches = list(ApiKey.objects.filter(key_hash__startswith=ref).select_related("workspace")[:2])
    else:
        raise KeyNotFound("key_not_found", f"name a key by its id or by at least {MIN_KEY_PREFIX} hex characters "
                                           "of its hash")
    if not matches:
        raise KeyNotFound("key_not_found", f"no key {ref!r}")
    if len(matches) > 1:
        raise KeyNotFound("key_ambiguous", f"{ref!r} names more than one key; give more of its hash")
    return matches[0]


def api_key_revoke(*, key: ApiKey) -> bool:
    """Revoke ``key`` (kept, with its revocation time, for the record). Returns ``False`` when it
    was already revoked. Processes that cached it refuse it within ``API_KEY_CACHE_TTL_S``."""
    revoked = ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
    key.refresh_from_db(fields=["revoked_at"])
    return bool(revoked)
