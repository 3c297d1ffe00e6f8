"""Query strings and path segments of the API routes obey the text rule of request bodies.

A query parameter name or value, or a path segment, holding U+0000 or a lone surrogate is
``422 invalid_character`` at the parameter's (or segment's) name, before the view runs, for
every DRF route at once; the admin and the console are left to Django.
"""
from __future__ import annotations

from django.http import JsonResponse
from rest_framework.views import APIView

from .errors import ApiError
from .json_body import check_text, member_path


class QueryTextMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        view_class = getattr(view_func, "cls", None)
        if not (isinstance(view_class, type) and issubclass(view_class, APIView)):
            return None
        try:
            for name, values in request.GET.lists():
                path = member_path("", name)
                check_text(name, path)
                for value in values:
                    check_text(value, path)
            for name, value in view_kwargs.items():
                if isinstance(value, str):
                    check_text(value, name)
        except ApiError as error:
            return JsonResponse(error.envelope(), status=error.status)
        return None
