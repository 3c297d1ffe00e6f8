"""``GET /tools``: the active MCP allowlist (``listing.tools_list``), with an ``ETag``; a request
whose ``If-None-Match`` names it is ``304`` without a body (the stdio bridge revalidates its
cached list so before each call)."""
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from catalog_app.api.schema import ErrorSerializer
from memseek_site.parsing import parse_query

from .listing import tools_etag, tools_list

_ToolList = inline_serializer("ToolList", {
    "protocol": serializers.CharField(), "catalog": serializers.JSONField(help_text="{hash}"),
    "interface": serializers.JSONField(allow_null=True, help_text="{name, version, hash, title, instructions} of "
                                       "the active mcp/*.yaml declaration, or null"),
    "tools": serializers.ListField(child=serializers.JSONField(), help_text=(
        "[{name, title, description, kind, binding: {kind, name?, version?, hash?, active?, lookup?}, "
        "route: {method, path, available}, input_schema, output_schema, annotations, hash}] in declared order"))})


class ToolListView(APIView):
    capability = "read"

    @extend_schema(summary="The MCP tools of the active declaration, with bindings, routes and schemas",
                   responses={200: _ToolList, 304: None, 401: ErrorSerializer, 422: ErrorSerializer})
    def get(self, request):
        parse_query(request.query_params, allowed=())
        etag = tools_etag(workspace=request.auth)
        if {etag, "*"} & _tags(request.META.get("HTTP_IF_NONE_MATCH", "")):
            return Response(status=304, headers={"ETag": etag})
        return Response(tools_list(workspace=request.auth), headers={"ETag": etag})


def _tags(header: str) -> set[str]:
    """The entity tags an ``If-None-Match`` header lists (weak ones compare by their tag)."""
    return {tag.strip().removeprefix("W/") for tag in header.split(",") if tag.strip()}
