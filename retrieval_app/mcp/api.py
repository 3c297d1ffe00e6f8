"""``GET /tools``: the active MCP allowlist (``listing.tools_list``)."""
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from catalog_app.api.schema import ErrorSerializer
from memseek_site.parsing import parse_query

from .listing import tools_list

_ToolList = inline_serializer("ToolList", {
    "protocol": serializers.CharField(), "catalog": serializers.JSONField(help_text="{hash}"),
    "interface": serializers.JSONField(allow_null=True, help_text="{name, version, hash, title, instructions} of "
                                       "the active mcp/*.yaml declaration, or null"),
    "tools": serializers.ListField(child=serializers.JSONField(), help_text=(
        "[{name, title, description, kind, binding: {kind, name?, version?, hash?, active?, lookup?}, "
        "route: {method, path, available}, input_schema, output_schema, annotations, hash}] in declared order"))})


class ToolListView(APIView):
    capability = "read"
    database = "read"

    @extend_schema(summary="The MCP tools of the active declaration, with bindings, routes and schemas",
                   responses={200: _ToolList, 401: ErrorSerializer, 422: ErrorSerializer})
    def get(self, request):
        parse_query(request.query_params, allowed=())
        return Response(tools_list(workspace=request.auth))
