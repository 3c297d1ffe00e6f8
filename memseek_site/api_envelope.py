"""Everything outside the API's views still answers like the API.

Below every path but the HTML ones (the admin, the console, the API's own docs page and static
files), a request no route matches is ``404 not_found`` and a request Django refuses before any
view (a ``Host`` outside ``ALLOWED_HOSTS``, a malformed request) is ``400 bad_request``, both in
the error envelope; the HTML paths keep Django's pages. A method a route does not serve is
``405 method_not_allowed`` from DRF itself (``memseek_site.errors``). A request target (path and
query string, as sent) longer than ``MAX_URL_BYTES`` is ``414 uri_too_long`` before any routing
or parsing. Every API response carries ``Cache-Control: no-store``: it holds one workspace's
records, which no shared cache may keep.
"""
from __future__ import annotations

from django.http import HttpResponse, JsonResponse
from django.views import defaults

from .conf import memseek_setting
from .errors import ApiError

HTML_PREFIXES = ("/admin/", "/console/", "/api/docs/", "/static/")


def is_api_path(path: str) -> bool:
    return not path.startswith(HTML_PREFIXES)


def not_found(request, exception):
    if not is_api_path(request.path):
        return defaults.page_not_found(request, exception)
    return _envelope(ApiError("not_found", f"No route {request.path}; the routes are listed at /api/schema/."))


def bad_request(request, exception):
    if not is_api_path(request.path):
        return defaults.bad_request(request, exception)
    return _envelope(ApiError("bad_request", "The request was refused before reaching a route (for example a Host "
                                             "the service does not answer for)."))


def _envelope(error: ApiError) -> JsonResponse:
    return JsonResponse(error.envelope(), status=error.status)


class NoStoreMiddleware:
    """Sets ``Cache-Control: no-store`` on every response below an API path."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if is_api_path(request.path):
            response["Cache-Control"] = "no-store"
        return response


class UriLengthMiddleware:
    """Refuses a request target longer than ``MAX_URL_BYTES`` with 414: the envelope below the
    API, a short HTML page on the HTML paths."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        limit = memseek_setting("MAX_URL_BYTES")
        if len(request.get_full_path().encode("utf-8")) <= limit:
            return self.get_response(request)
        if not is_api_path(request.path):
            return HttpResponse(f"<h1>URI too long</h1><p>The longest URL served is {limit} bytes.</p>", status=414)
        response = _envelope(ApiError("uri_too_long", f"The URL is longer than {limit} bytes (MAX_URL_BYTES); send "
                                                      "long values in a POST body (POST /search takes a SearchSpec)."))
        response["Cache-Control"] = "no-store"
        return response
