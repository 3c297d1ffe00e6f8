"""``GET /views`` and ``POST /views/{name}/query``."""
from drf_spectacular.utils import OpenApiExample, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from catalog_app.api.schema import ErrorSerializer
from memseek_site.parsing import parse_query
from memseek_site.tracing import RECORD_COUNT, memory_operation

from ..stage_spans import request_trace
from ..views.service import view_list, view_query

_ViewList = inline_serializer("ViewList", {"views": serializers.ListField(child=serializers.JSONField())})
_ViewResult = inline_serializer("ViewQueryResult", {
    "view": serializers.JSONField(), "parameters": serializers.JSONField(), "hits": serializers.JSONField(),
    "input_record_ids": serializers.ListField(child=serializers.UUIDField()),
    "ranking": serializers.JSONField(required=False),
    "rendered": serializers.CharField(allow_null=True, required=False),
    "truncated": serializers.BooleanField(), "profiles": serializers.ListField(child=serializers.CharField()),
    "backend": serializers.JSONField()})


class ViewListView(APIView):
    capability = "read"
    database = "read"

    @extend_schema(summary="Every loaded view version and its input contract",
                   responses={200: _ViewList, 401: ErrorSerializer})
    def get(self, request):
        parse_query(request.query_params, allowed=())
        return Response({"views": view_list(workspace=request.auth)})


class ViewQueryView(APIView):
    capability = "read"
    database = "read"

    @extend_schema(summary="Run the active version of a view", request=inline_serializer(
                       "ViewParameters", {"parameter": serializers.JSONField(required=False)}),
                   responses={200: _ViewResult, 401: ErrorSerializer, 404: ErrorSerializer, 409: ErrorSerializer,
                              422: ErrorSerializer, 503: ErrorSerializer},
                   examples=[OpenApiExample("Parameters", request_only=True,
                                            value={"entity": "contact.maria", "task": "prepare the Q3 update"})])
    def post(self, request, name: str):
        with memory_operation("search_memory", store_id=request.auth.name) as span:
            result = view_query(workspace=request.auth, name=name, body=request.data, trace=request_trace())
            span.set_attribute(RECORD_COUNT, len(result["hits"]))
        return Response(result)
