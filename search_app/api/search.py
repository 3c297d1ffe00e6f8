"""``POST /search`` (a full SearchSpec) and ``GET /search`` (the URL convenience form)."""
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from catalog_app.api.schema import ErrorSerializer
from catalog_app.record_limits import ENTITY_CHARS
from memseek_site.conf import memseek_setting
from memseek_site.parsing import PUBLIC_NAME, int_schema, parse_query, parse_string, query_int, string_schema

from memseek_site.tracing import RECORD_COUNT, memory_operation

from ..services import search_run
from ..stage_spans import request_trace
from .schema import SearchResponseSerializer, SearchSpecSerializer

_ERRORS = {401: ErrorSerializer, 409: ErrorSerializer, 422: ErrorSerializer, 503: ErrorSerializer}
GET_INCLUDE = ["text", "collection", "type", "occurred_at"]


class SearchView(APIView):
    capability = "read"
    database = "read"

    @extend_schema(
        summary="Run a search (full SearchSpec)", request=SearchSpecSerializer,
        responses={200: SearchResponseSerializer, **_ERRORS},
        examples=[OpenApiExample("Hybrid search for one customer", request_only=True, value={
            "q": "Q3 budget", "mode": "hybrid", "scope": {"entities": ["contact.maria"], "collections": ["main"]},
            "k": 5, "include": ["text", "occurred_at"], "render": True})])
    def post(self, request):
        return Response(traced_search(request.auth, request.data))

    @extend_schema(
        summary="Quick hybrid search from a URL",
        parameters=[OpenApiParameter("q", string_schema(max_length=memseek_setting("MAX_QUERY_CHARS")), required=True),
                    OpenApiParameter("entity", string_schema(max_length=ENTITY_CHARS)),
                    OpenApiParameter("collection", string_schema(pattern=PUBLIC_NAME)),
                    OpenApiParameter("k", int_schema(minimum=1, maximum=100), description="1-100, default 20")],
        responses={200: SearchResponseSerializer, **_ERRORS})
    def get(self, request):
        params = parse_query(request.query_params, allowed={"q", "entity", "collection", "k"}, required={"q"})
        body = {"q": params["q"], "mode": "hybrid", "include": GET_INCLUDE, "render": True,
                "k": query_int(params["k"], "k", minimum=1, maximum=100) if "k" in params else 20}
        scope = {}
        if "entity" in params:
            scope["entities"] = [parse_string(params["entity"], "entity", max_length=ENTITY_CHARS)]
        if "collection" in params:
            scope["collections"] = [parse_string(params["collection"], "collection", pattern=PUBLIC_NAME)]
        if scope:
            body["scope"] = scope
        return Response(traced_search(request.auth, body))


def traced_search(workspace, body) -> dict:
    """``search_run`` as the GenAI memory operation ``search_memory`` on the workspace's store,
    its pipeline stages as spans inside (no-ops while tracing is off)."""
    query = body.get("q") if isinstance(body, dict) and isinstance(body.get("q"), str) else None
    with memory_operation("search_memory", store_id=workspace.name, query=query) as span:
        result = search_run(workspace=workspace, body=body, trace=request_trace())
        span.set_attribute(RECORD_COUNT, len(result["hits"]))
    return result
