"""Query strings and path segments of the API routes obey the text rule of request bodies.

The query string is decoded strictly: a parameter name or value whose percent-decoded bytes are
not UTF-8 (a truncated sequence such as ``%C3%28``, CESU-8's encoded surrogates, an overlong
form) is ``400 invalid_encoding`` at the parameter's name, where Django alone would have
replaced the bytes with U+FFFD and searched for that. A query parameter name or value, or a path
segment, holding U+0000 or a lone surrogate is ``422 invalid_character`` at the parameter's (or
segment's) name. Both are answered before the view runs, for every DRF route at once; the admin
and the console are left to Django.
"""
from __future__ import annotations

from urllib.parse import unquote_to_bytes

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
            check_query_encoding(request.META.get("QUERY_STRING", ""))
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


def check_query_encoding(query_string: str) -> None:
    """Raise ``invalid_encoding`` at the first parameter of ``query_string`` (as WSGI passes it:
    the raw bytes as Latin-1) whose name or value does not percent-decode to UTF-8; split and
    decoded as Django's ``QueryDict`` does, but refusing instead of replacing."""
    for pair in query_string.split("&"):
        if not pair:
            continue
        raw_name, _, raw_value = pair.partition("=")
        try:
            name_bytes = unquote_to_bytes(raw_name.replace("+", " ").encode("latin-1"))
            value_bytes = unquote_to_bytes(raw_value.replace("+", " ").encode("latin-1"))
        except UnicodeEncodeError:  # not from a WSGI server: already text
            continue
        name = name_bytes.decode("utf-8", "replace")
        for part in (name_bytes, value_bytes):
            try:
                part.decode("utf-8")
            except UnicodeDecodeError as error:
                raise ApiError("invalid_encoding", f"{name}: the query string is not valid UTF-8 (byte "
                               f"0x{part[error.start]:02X} at offset {error.start}); percent-encode the UTF-8 "
                               "bytes of the text", member_path("", name)) from None
