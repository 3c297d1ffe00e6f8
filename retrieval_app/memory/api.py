"""``GET /memory/grep``, ``/latest``, ``/around``, ``/read``, ``/ls``, ``/history``: thin views.

Each parses its query string once (``params``), calls one lookup and returns its payload. The
serializers only describe the shapes for the OpenAPI document.
"""
from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from catalog_app.api.schema import ErrorSerializer
from catalog_app.record_limits import ENTITY_CHARS
from catalog_app.bm25_terms import TERM_CHARACTER as HAS_TERM
from memseek_site.conf import memseek_setting
from memseek_site.openapi import ISSUED_BY_SERVER
from memseek_site.parsing import int_schema, schema_pattern, string_schema

from . import dates, params, passages
from .addresses import path_schema
from .listing import memory_ls
from .lookups import memory_around, memory_grep, memory_latest
from .reads import memory_history, memory_read


class MemoryHitSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    path = serializers.CharField(help_text="passages/<collection>/<entity>/<record id>; segments escape % / and "
                                           "control characters as %XX.")
    roles = serializers.ListField(child=serializers.CharField(), help_text="Who spoke: the collection's role_field.")
    text = serializers.CharField(help_text="At most 1,400 characters; /memory/read gives the passage whole.")
    truncated = serializers.BooleanField()
    content = serializers.ChoiceField(["stored"])
    occurred_at = serializers.DateTimeField()


class MemoryGrepSerializer(serializers.Serializer):
    query = serializers.CharField()
    path = serializers.CharField()
    found = serializers.IntegerField()
    hits = MemoryHitSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)
    complete = serializers.BooleanField(help_text="False: the candidate bound MEMORY_GREP_CANDIDATES was reached, "
                                                  "so older matches may exist; narrow the path or the dates.")


class MemoryLatestSerializer(serializers.Serializer):
    path = serializers.CharField()
    found = serializers.IntegerField()
    hits = MemoryHitSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class MemoryAroundSerializer(serializers.Serializer):
    passage = MemoryHitSerializer()
    before = MemoryHitSerializer(many=True, help_text="Oldest first, ending just before the passage.")
    after = MemoryHitSerializer(many=True, help_text="Oldest first, starting just after the passage.")


class MemoryReadSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    path = serializers.CharField()
    passage_path = serializers.CharField()
    fact_path = serializers.CharField(allow_null=True)
    collection = serializers.CharField()
    entity = serializers.CharField()
    type = serializers.CharField()
    key = serializers.CharField(allow_null=True)
    status = serializers.ChoiceField(["active", "draft"])
    roles = serializers.ListField(child=serializers.CharField())
    text = serializers.CharField(allow_blank=True)
    content = serializers.JSONField()
    derived_from = serializers.ListField(child=serializers.UUIDField())
    occurred_at = serializers.DateTimeField()
    recorded_at = serializers.DateTimeField()
    current = serializers.BooleanField(help_text="False: a newer row of its lane supersedes it.")


class MemoryLsEntrySerializer(serializers.Serializer):
    name = serializers.CharField()
    kind = serializers.ChoiceField(["root", "collection", "entity", "passage", "fact"])
    path = serializers.CharField()
    id = serializers.UUIDField(allow_null=True, help_text="Null for a root, collection or entity entry.")
    count = serializers.IntegerField(required=False, help_text="Passages (facts) under a group entry.")
    versions = serializers.IntegerField(required=False, help_text="Rows of a fact's lane (/memory/history).")
    roles = serializers.ListField(child=serializers.CharField(), required=False)
    text = serializers.CharField(required=False, allow_blank=True)
    truncated = serializers.BooleanField(required=False)
    content = serializers.ChoiceField(["stored"], required=False)
    occurred_at = serializers.DateTimeField(required=False)


class MemoryLsSerializer(serializers.Serializer):
    path = serializers.CharField()
    entries = MemoryLsEntrySerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True, help_text="Pass as cursor: the last entry's path.")


class MemoryVersionSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    path = serializers.CharField(help_text="This version's passage path (readable by /memory/read).")
    fact_path = serializers.CharField()
    text = serializers.CharField(allow_blank=True)
    status = serializers.CharField(help_text="current, superseded, retracted (a tombstone) or pending (not ready).")
    superseded_by = serializers.UUIDField(allow_null=True)
    said_on = serializers.DateField(help_text="The UTC day of occurred_at.")
    occurred_at = serializers.DateTimeField()
    recorded_at = serializers.DateTimeField()
    roles = serializers.ListField(child=serializers.CharField())


class MemoryHistorySerializer(serializers.Serializer):
    path = serializers.CharField()
    collection = serializers.CharField()
    entity = serializers.CharField()
    key = serializers.CharField()
    versions = MemoryVersionSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


def _query(name: str, description: str, schema: dict, *, required: bool = False, **extensions) -> OpenApiParameter:
    return OpenApiParameter(name, schema, OpenApiParameter.QUERY, required=required, description=description,
                            extensions=extensions or None)


# A date bound of dates.parse_window: a calendar day, or a full time with a zone.
DATE_BOUND = {"type": "string", "anyOf": [{"format": "date", "pattern": schema_pattern(dates.DAY)},
                                     {"format": "date-time"}]}
_PREFIX = _query("path", "A path prefix: passages/, passages/<collection>, passages/<collection>/<entity>, facts/... "
                 "(default passages). Unknown collections and entities are 404 path_not_found.", path_schema())
_WINDOW = [_PREFIX, _query("entity", "Only this entity's passages.", string_schema(max_length=ENTITY_CHARS)),
           _query("after", "YYYY-MM-DD or an ISO time with zone: from then on.", DATE_BOUND),
           _query("before", "YYYY-MM-DD or an ISO time with zone: as of then (a day counts whole).", DATE_BOUND)]
_LIMIT = _query("limit", "Page size (default MEMORY_PAGE_LIMIT, at most MEMORY_MAX_PAGE).",
                int_schema(minimum=1, maximum=memseek_setting("MEMORY_MAX_PAGE")))
_PAGE = [_LIMIT, _query("cursor", "next_cursor of the previous page.",
                        {"type": "string", "pattern": schema_pattern(passages.CURSOR)}, **{ISSUED_BY_SERVER: True})]
_AROUND = int_schema(minimum=0, maximum=memseek_setting("MEMORY_AROUND_MAX"))
_ERRORS = {401: ErrorSerializer, 404: ErrorSerializer, 422: ErrorSerializer}


class MemoryGrepView(APIView):
    capability = "read"
    database = "read"

    @extend_schema(summary="Passages holding an exact phrase, id or error code (case ignored), newest first",
                   parameters=[_query("q", "The phrase (at most MEMORY_GREP_MAX_CHARS characters).",
                                      {**string_schema(max_length=memseek_setting("MEMORY_GREP_MAX_CHARS")),
                                       "pattern": HAS_TERM}, required=True),
                               *_WINDOW, *_PAGE],
                   responses={200: MemoryGrepSerializer, **_ERRORS})
    def get(self, request):
        return Response(memory_grep(workspace=request.auth, request=params.grep_request(request.query_params)))


class MemoryLatestView(APIView):
    capability = "read"
    database = "read"

    @extend_schema(summary="The newest passages under a path, or every passage between two dates",
                   parameters=[*_WINDOW, *_PAGE], responses={200: MemoryLatestSerializer, **_ERRORS})
    def get(self, request):
        return Response(memory_latest(workspace=request.auth, request=params.latest_request(request.query_params)))


class MemoryAroundView(APIView):
    capability = "read"
    database = "read"

    @extend_schema(summary="The passages either side of one, in the same conversation",
                   parameters=[_query("path", "passages/<collection>/<entity>/<record id>.",
                                      path_schema(complete=True, kinds=("passages",)), required=True),
                               _query("before", "Passages before it (default 5, at most MEMORY_AROUND_MAX).", _AROUND),
                               _query("after", "Passages after it (default 5, at most MEMORY_AROUND_MAX).", _AROUND)],
                   responses={200: MemoryAroundSerializer, **_ERRORS})
    def get(self, request):
        return Response(memory_around(workspace=request.auth, request=params.around_request(request.query_params)))


class MemoryReadView(APIView):
    capability = "read"
    database = "read"

    @extend_schema(summary="One passage or fact, whole, by path",
                   parameters=[_query("path", "passages/<collection>/<entity>/<record id> or "
                                      "facts/<collection>/<entity>/<key> (the current value).",
                                      path_schema(complete=True), required=True)],
                   responses={200: MemoryReadSerializer, **_ERRORS})
    def get(self, request):
        return Response(memory_read(workspace=request.auth, path=params.read_request(request.query_params)))


class MemoryLsView(APIView):
    capability = "read"
    database = "read"

    @extend_schema(summary="What exists under a path: kinds, collections, entities, passages, facts, with counts",
                   parameters=[_query("path", "A prefix (default: the root).", path_schema()), _LIMIT,
                               _query("cursor", "next_cursor of the previous page (an entry's path).", path_schema(),
                                      **{ISSUED_BY_SERVER: True})],
                   responses={200: MemoryLsSerializer, **_ERRORS})
    def get(self, request):
        return Response(memory_ls(workspace=request.auth, request=params.ls_request(request.query_params)))


class MemoryHistoryView(APIView):
    capability = "read"
    database = "read"

    @extend_schema(summary="Every value recorded for one subject and attribute, oldest first",
                   parameters=[_query("path", "facts/<collection>/<entity>/<key>.",
                                      path_schema(complete=True, kinds=("facts",)), required=True), *_PAGE],
                   responses={200: MemoryHistorySerializer, **_ERRORS})
    def get(self, request):
        return Response(memory_history(workspace=request.auth,
                                       request=params.history_request(request.query_params)))
