"""Rate limits per API key and per workspace, for each route class, counted in the shared cache.

``RateLimitThrottle`` is the API's one DRF throttle: it runs after the key is known and its
capability checked, and counts the request against its key's rate and its workspace's rate
for the request's route class (``memseek_site.deadline.route_class``; the rates come from
``catalog_app.limits``). Counting is django-ratelimit's ``get_usage``: a fixed window per
counter (``cache.add`` then ``cache.incr``, both atomic on Redis), so with ``CACHE_URL`` set
every process and host sharing the cache shares each count; without it the count is per process.

Past a rate the request is refused before its view runs, so nothing of it happened and any
method may be sent again: ``429 rate_limited`` with ``Retry-After`` (whole seconds until the
counter's next window opens, at least 1) in the header and as ``retry_after_s`` in the
envelope, which also names the ``scope`` (``key`` or ``workspace``), the ``route_class`` and the
``limit``. A request the MCP server makes in-process for its caller is not counted again: the
caller's ``/mcp`` request was. A cache that cannot be reached counts nothing and refuses
nothing (logged): rate limits must not take the API down with them.
"""
from __future__ import annotations

import logging

from django_ratelimit.core import get_usage
from rest_framework.throttling import BaseThrottle

from memseek_site.errors import ApiError

from .auth import IN_PROCESS_WORKSPACE, KeyIdentity
from .models import Workspace

logger = logging.getLogger(__name__)


class RateLimitThrottle(BaseThrottle):
    def allow_request(self, request, view) -> bool:
        workspace, identity = request.auth, request.user
        if not isinstance(workspace, Workspace) or not isinstance(identity, KeyIdentity):
            return True  # a public route (health, the OpenAPI document): no key to count against
        if IN_PROCESS_WORKSPACE in request.META:
            return True
        # Imported here: DRF imports this class while ``rest_framework.views`` loads, which
        # ``memseek_site.deadline`` (the route classes) itself imports.
        from memseek_site.deadline import route_class

        from .limits import workspace_limits

        limits = workspace_limits(workspace.settings)
        url_name = request.resolver_match.url_name if request.resolver_match else None
        klass = route_class(url_name, request.method)
        for scope, counted_id in (("key", identity.key_id), ("workspace", workspace.pk)):
            rate = limits.rate(scope, klass)
            if rate is not None:
                _count(request, scope, klass, counted_id, rate)
        return True


def _count(request, scope: str, klass: str, counted_id: int, rate: str) -> None:
    """Count one request of class ``klass`` for the key or workspace ``counted_id`` (``scope``
    says which); raise ``rate_limited`` past ``rate``."""
    from memseek_site.error_handler import RETRY_AFTER_MEMBER

    try:
        usage = get_usage(request, group=f"memseek:{scope}:{klass}", key=lambda group, request: str(counted_id),
                          rate=rate, increment=True)
    except Exception:  # noqa: BLE001  whatever the cache client raises (connection refused, timeout, ...)
        logger.warning("rate limit not counted: the cache cannot be reached", exc_info=True)
        return
    if usage is None or not usage["should_limit"]:
        return
    if usage["limit"] == 0 and usage["time_left"] < 0:
        # django-ratelimit's answer when the cache held no count after add/incr: unknown, not over.
        logger.warning("rate limit not counted: the cache returned no count")
        return
    # django-ratelimit's window runs through the whole second it names as its end (``time_left``
    # counts whole seconds to it), so the next window opens one second after that.
    wait = int(usage["time_left"]) + 1
    raise ApiError("rate_limited", f"This {scope} sent more than {rate} {klass} requests; retry after {wait} s "
                                   f"(Retry-After), or spread the requests out.", None,
                   {RETRY_AFTER_MEMBER: wait, "scope": scope, "route_class": klass, "limit": rate})
