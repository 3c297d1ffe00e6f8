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

_TOOL_FIELDS = {
    "name": serializers.CharField(), "title": serializers.CharField(allow_null=True),
    "description": serializers.CharField(), "kind": serializers.CharField(),
    "binding": serializers.DictField(help_text="{kind, name?, version?, hash?, active?, lookup?}"),
    "route": inline_serializer("ToolRoute", {"method": serializers.CharField(), "path": serializers.CharField(),
                                             "available": serializers.BooleanField()}),
    "input_schema": serializers.DictField(help_text="JSON Schema of the arguments"),
    "output_schema": serializers.DictField(help_text="JSON Schema of structuredContent: the route's success body"),
    "annotations": inline_serializer("ToolAnnotations", {
        name: serializers.BooleanField() for name in ("readOnlyHint", "idempotentHint", "destructiveHint",
                                                      "openWorldHint")}),
    "hash": serializers.CharField()}
_ToolList = inline_serializer("ToolList", {
    "protocol": serializers.CharField(),
    "catalog": inline_serializer("ToolCatalog", {"hash": serializers.CharField()}),
    "interface": inline_serializer("ToolInterface", {
        "name": serializers.CharField(), "version": serializers.IntegerField(), "hash": serializers.CharField(),
        "title": serializers.CharField(), "instructions": serializers.CharField()}, allow_null=True),
    "tools": inline_serializer("Tool", _TOOL_FIELDS, many=True, help_text="In declared order")})


class ToolListView(APIView):
    capability = "read"
    database = "read"

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
