"""Bearer-key authentication: ``Authorization: Bearer <key>`` resolves to one workspace.

Only the SHA-256 of a key is stored. Resolved hashes are cached per process for at most
``API_KEY_CACHE_TTL_S`` seconds (capped at 60) in an LRU of 1,024 entries, so a revoked key
stops working within that time.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections import OrderedDict

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication
from rest_framework.permissions import BasePermission

from memseek_site.conf import memseek_setting
from memseek_site.errors import ApiError

from .models import ApiKey, Workspace

_CACHE_SIZE = 1024
# WSGI environ key of a request this process builds for itself (the MCP server calling a route
# for the caller of /mcp): ``(key, workspace)`` already resolved for that caller in the same
# request. No HTTP client can set it: servers put headers only under ``HTTP_*``.
IN_PROCESS_WORKSPACE = "memseek.workspace"
_cache: "OrderedDict[str, tuple[float, int]]" = OrderedDict()
_cache_lock = threading.Lock()


def generate_key() -> tuple[str, str]:
    """Return a new key (32 random bytes, URL-safe) and its SHA-256 hex."""
    key = secrets.token_urlsafe(32)
    return key, hash_key(key)


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def workspace_for_key(key: str) -> Workspace | None:
    digest = hash_key(key)
    ttl = memseek_setting("API_KEY_CACHE_TTL_S")
    now = time.monotonic()
    with _cache_lock:
        cached = _cache.get(digest)
        if cached and now - cached[0] < ttl:
            _cache.move_to_end(digest)
            workspace_id = cached[1]
        else:
            workspace_id = None
    if workspace_id is None:
        row = (ApiKey.objects.filter(key_hash=digest, revoked_at__isnull=True)
               .values("key_hash", "workspace_id").first())
        if row is None or not hmac.compare_digest(row["key_hash"], digest):
            return None
        workspace_id = row["workspace_id"]
        with _cache_lock:
            _cache[digest] = (now, workspace_id)
            _cache.move_to_end(digest)
            while len(_cache) > _CACHE_SIZE:
                _cache.popitem(last=False)
    return Workspace.objects.filter(pk=workspace_id).first()


def clear_key_cache() -> None:
    with _cache_lock:
        _cache.clear()


class WorkspaceKeyAuthentication(BaseAuthentication):
    """Sets ``request.auth`` to the caller's Workspace."""

    def authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION", "")
        parts = header.split()
        if len(parts) != 2 or parts[0].lower() != "bearer":
            raise ApiError("unauthorized", "Send 'Authorization: Bearer <workspace key>'.")
        known = request.META.get(IN_PROCESS_WORKSPACE)
        if known is not None and hmac.compare_digest(known[0], parts[1]):
            workspace = known[1]
        else:
            workspace = workspace_for_key(parts[1])
        if workspace is None:
            raise ApiError("unauthorized", "The bearer key is not valid.")
        return (None, workspace)

    def authenticate_header(self, request):
        return "Bearer"


class HasWorkspace(BasePermission):
    def has_permission(self, request, view):
        return isinstance(request.auth, Workspace)


class WorkspaceKeyScheme(OpenApiAuthenticationExtension):
    """Describes the bearer key in the OpenAPI schema."""

    target_class = "catalog_app.auth.WorkspaceKeyAuthentication"
    name = "bearer"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "The workspace API key."}
