"""The keyed API routes, found by walking the URLconf (not listed by hand), so a route added
anywhere shows up in every test that iterates them."""
from __future__ import annotations

from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.views import APIView

METHODS = ("get", "post", "put", "patch", "delete")


def _walk(patterns, prefix: str = ""):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _walk(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            yield prefix + str(pattern.pattern), pattern.callback


def keyed_api_operations() -> list[tuple[str, str, type[APIView]]]:
    """``(METHOD, route, view class)`` of every DRF view that takes a bearer key, the route in
    Django's syntax (``records/<str:id>/approve``), sorted."""
    found = set()
    for route, callback in _walk(get_resolver().url_patterns):
        view = getattr(callback, "cls", None)
        if view is None or not issubclass(view, APIView) or not view().get_authenticators():
            continue
        for method in METHODS:
            if hasattr(view, method):
                found.add((method.upper(), route, view))
    return sorted(found, key=lambda item: (item[1], item[0]))


# Prefixes served to people with a session (CSRF and staff checks), not to API keys.
SESSION_PREFIXES = ("admin/", "console/")


def unkeyed_routes() -> set[str]:
    """Every route outside the admin and the console that ``keyed_api_operations`` does not
    list: a view that takes no bearer key or is not a DRF view."""
    keyed = {route for _, route, _ in keyed_api_operations()}
    return {route for route, _ in _walk(get_resolver().url_patterns)
            if not route.startswith(SESSION_PREFIXES) and route not in keyed}
