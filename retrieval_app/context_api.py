"""``GET /context``: a token-budgeted, prompt-ready context for one entity and one task.

The view splits the query string (unknown or repeated parameters are ``422 request_schema``;
``budget`` must be an integer, ``collections`` a comma-separated list of public names) and
calls ``context_build``, which checks every value and builds the payload.
"""
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from catalog_app.api.schema import ErrorSerializer
from catalog_app.record_limits import ENTITY_CHARS
from memseek_site.conf import memseek_setting
from memseek_site.openapi import QUERY_RULES
from memseek_site.parsing import PUBLIC_NAME, int_schema, parse_query, query_int, query_list, query_list_schema, \
    string_schema

from . import context
from .context import context_build

_PARAMETERS = ("entity", "task", "budget", "collections", "fence_tag", "fence_preamble")
_REQUIRED = ("entity", "task", "budget")


class ContextSectionSerializer(serializers.Serializer):
    ids = serializers.ListField(child=serializers.UUIDField(), help_text="Emitted rows of this section, in order.")
    tokens = serializers.IntegerField(help_text="cl100k tokens these rows contribute to rendered.")


class ContextComponentsSerializer(serializers.Serializer):
    document = ContextSectionSerializer(help_text="Current facts of the entity, most important first.")
    search = ContextSectionSerializer(help_text="Hybrid search for the task within the entity.")
    recent = ContextSectionSerializer(help_text="The entity's newest rows.")


class ContextResponseSerializer(serializers.Serializer):
    entity = serializers.CharField()
    task = serializers.CharField()
    budget = serializers.IntegerField()
    components = ContextComponentsSerializer()
    input_record_ids = serializers.ListField(child=serializers.UUIDField(),
                                             help_text="Every emitted id, in the order of rendered.")
    rendered = serializers.CharField(allow_blank=True, help_text="Escaped compact rows, optionally fenced.")
    tokens = serializers.IntegerField(help_text="cl100k tokens of rendered; never more than budget.")
    truncated = serializers.BooleanField(help_text="True when some candidate row did not fit.")


class ContextView(APIView):
    capability = "read"
    database = "read"

    @extend_schema(
        summary="Token-budgeted context for an entity and a task",
        description="Sections document (30%), search (40%) and recent (30%) of the budget, unused budget "
                    "spilling forward; whole rows only, each row once; emitted rows are touched.",
        parameters=[
            OpenApiParameter("entity", {**string_schema(max_length=ENTITY_CHARS), "not": {"const": "*"}},
                             required=True, description="Whose memory; not *."),
            OpenApiParameter("task", string_schema(max_length=memseek_setting("MAX_QUERY_CHARS")), required=True,
                             description="What the context is for; the search query (at most MAX_QUERY_CHARS)."),
            OpenApiParameter("budget", int_schema(minimum=1, maximum=memseek_setting("MODEL_CONTEXT_TOKENS")),
                             required=True, description="cl100k tokens, 1..MODEL_CONTEXT_TOKENS, fence included."),
            OpenApiParameter("collections", query_list_schema(PUBLIC_NAME),
                             description="Comma-separated collection names."),
            OpenApiParameter("fence_tag", string_schema(pattern=PUBLIC_NAME),
                             description="Wrap the rows in this element."),
            OpenApiParameter("fence_preamble", string_schema(max_length=context.MAX_FENCE_PREAMBLE),
                             description="A line of prose before the element (at most 512 characters); "
                                         "needs fence_tag."),
        ],
        extensions={QUERY_RULES: {"dependentRequired": {"fence_preamble": ["fence_tag"]}}},
        responses={200: ContextResponseSerializer, 401: ErrorSerializer, 409: ErrorSerializer,
                   422: ErrorSerializer, 503: ErrorSerializer})
    def get(self, request):
        raw = parse_query(request.query_params, allowed=_PARAMETERS, required=_REQUIRED)
        collections = None
        if "collections" in raw:
            collections = query_list(raw["collections"], "collections", pattern=PUBLIC_NAME)
        return Response(context_build(workspace=request.auth, entity=raw["entity"], task=raw["task"],
                                      budget=query_int(raw["budget"], "budget"), collections=collections,
                                      fence_tag=raw.get("fence_tag"), fence_preamble=raw.get("fence_preamble")))
