"""Bearer-key authentication and key capabilities.

``Authorization: Bearer <key>`` resolves to one workspace and the key's capabilities. Only the
SHA-256 of a key is stored. Resolved hashes are cached per process for at most
``API_KEY_CACHE_TTL_S`` seconds (capped at 60) in an LRU of 1,024 entries, so a revoked key (or a
changed capability set) takes effect within that time.

Every API view declares the one capability it needs as its ``capability`` class attribute
(``read``, ``write`` or ``review``); ``HasWorkspace``, the default permission class, is the only
place that checks it. A view that declares none needs every capability, so a forgotten
declaration refuses scoped keys instead of letting them through, and the URLconf walk in
``tests/catalog_app/test_capabilities.py`` fails.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from django.db import DEFAULT_DB_ALIAS
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication
from rest_framework.permissions import BasePermission

from memseek_site.conf import memseek_setting
from memseek_site.consistency import route_request
from memseek_site.errors import ApiError
from memseek_site.replicas import current_alias, serving

from .models import CAPABILITIES, ApiKey, Workspace

_CACHE_SIZE = 1024
# WSGI environ key of a request this process builds for itself (the MCP server calling a route
# for the caller of /mcp): ``(key, (workspace, identity))`` already resolved for that caller in the
# same request. No HTTP client can set it: servers put headers only under ``HTTP_*``.
IN_PROCESS_WORKSPACE = "memseek.workspace"


@dataclass(frozen=True, slots=True)
class KeyIdentity:
    """The key a request authenticated with (``request.user``); ``request.auth`` is its workspace."""

    key_id: int
    capabilities: frozenset[str]
    is_authenticated = True


_cache: "OrderedDict[str, tuple[float, int, KeyIdentity]]" = OrderedDict()
_cache_lock = threading.Lock()


def generate_key() -> tuple[str, str]:
    """Return a new key (32 random bytes, URL-safe) and its SHA-256 hex."""
    key = secrets.token_urlsafe(32)
    return key, hash_key(key)


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def key_identity_resolve(key: str) -> tuple[int, KeyIdentity] | None:
    """The workspace id and identity of an unrevoked ``key`` (from this process's cache, else
    the primary's key row), or ``None``."""
    digest = hash_key(key)
    ttl = memseek_setting("API_KEY_CACHE_TTL_S")
    now = time.monotonic()
    with _cache_lock:
        cached = _cache.get(digest)
        if cached and now - cached[0] < ttl:
            _cache.move_to_end(digest)
            return cached[1], cached[2]
    row = (ApiKey.objects.filter(key_hash=digest, revoked_at__isnull=True)
           .values("id", "key_hash", "workspace_id", "capabilities").first())
    if row is None or not hmac.compare_digest(row["key_hash"], digest):
        return None
    resolved = (row["workspace_id"], KeyIdentity(row["id"], frozenset(row["capabilities"])))
    with _cache_lock:
        _cache[digest] = (now, *resolved)
        _cache.move_to_end(digest)
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return resolved


def workspace_get(workspace_id) -> Workspace | None:
    """The workspace row, read on the server serving this request; a replica that does not hold
    it yet (a workspace made outside the API, which leaves no last-write position) defers to the
    primary."""
    workspace = Workspace.objects.filter(pk=workspace_id).first()
    if workspace is None and current_alias() != DEFAULT_DB_ALIAS:
        with serving(DEFAULT_DB_ALIAS):
            workspace = Workspace.objects.filter(pk=workspace_id).first()
    return workspace


def key_resolve(key: str) -> tuple[Workspace, KeyIdentity] | None:
    """The workspace and identity of an unrevoked ``key``, or ``None``."""
    resolved = key_identity_resolve(key)
    if resolved is None:
        return None
    workspace = workspace_get(resolved[0])
    return None if workspace is None else (workspace, resolved[1])


def clear_key_cache() -> None:
    with _cache_lock:
        _cache.clear()


def required_capabilities(view, method: str | None = None) -> frozenset[str]:
    """What ``view`` (a class or an instance) needs for ``method`` (by default the method of the
    instance's request): its ``capability_by_method`` entry for it ({"DELETE": "write"}: one path,
    methods of different weight), else its declared ``capability``, else all."""
    if method is None:
        method = getattr(getattr(view, "request", None), "method", None)
    declared = getattr(view, "capability_by_method", {}).get(method, getattr(view, "capability", None))
    return frozenset((declared,)) if declared is not None else frozenset(CAPABILITIES)


class WorkspaceKeyAuthentication(BaseAuthentication):
    """Sets ``request.auth`` to the caller's Workspace and ``request.user`` to its ``KeyIdentity``."""

    def authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION", "")
        parts = header.split()
        if len(parts) != 2 or parts[0].lower() != "bearer":
            raise ApiError("unauthorized", "Send 'Authorization: Bearer <workspace key>'.")
        known = request.META.get(IN_PROCESS_WORKSPACE)
        if known is not None and hmac.compare_digest(known[0], parts[1]):
            workspace, identity = known[1]
            return (identity, workspace)
        resolved = key_identity_resolve(parts[1])
        workspace = None
        if resolved is not None:
            workspace_id, identity = resolved
            view = (request.parser_context or {}).get("view")
            if view is not None and required_capabilities(view, request.method) <= identity.capabilities:
                # Routed before the workspace row is read, so a read served by a replica reads
                # it there and the primary is not asked at all (a key that lacks the capability
                # is routed by HasWorkspace after its 403, as before).
                route_request(request._request, view, workspace_id)
            workspace = workspace_get(workspace_id)
        if workspace is None:
            raise ApiError("unauthorized", "The bearer key is not valid (unknown or revoked).")
        return (identity, workspace)

    def authenticate_header(self, request):
        return "Bearer"


class HasWorkspace(BasePermission):
    """A key of a workspace that holds the capability the view declares (403
    ``capability_missing`` naming it otherwise)."""

    def has_permission(self, request, view):
        if not isinstance(request.auth, Workspace) or not isinstance(request.user, KeyIdentity):
            return False
        missing = sorted(required_capabilities(view) - request.user.capabilities)
        if missing:
            raise ApiError("capability_missing",
                           f"This key lacks the {', '.join(repr(c) for c in missing)} capability this route needs; "
                           f"use a key minted with it (manage.py create_key --capabilities ...).")
        route_request(request._request, view, request.auth.pk)  # which server serves it: memseek_site.replicas
        return True


class WorkspaceKeyScheme(OpenApiAuthenticationExtension):
    """Describes the bearer key in the OpenAPI schema."""

    target_class = "catalog_app.auth.WorkspaceKeyAuthentication"
    name = "bearer"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "The workspace API key; each route needs one "
                                                                   "capability (read, write or review) of it."}
