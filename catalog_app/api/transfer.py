"""``GET /export`` (a workspace or one entity as JSON Lines, streamed, resumable by cursor) and
``POST /import`` (such a document into the key's workspace, in one transaction)."""
from __future__ import annotations

import json

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from memseek_site.conf import memseek_setting
from memseek_site.openapi import ISSUED_BY_SERVER
from memseek_site.json_body import StrictJSONParser
from memseek_site.parsing import fail, parse_query, parse_string, string_schema

from ..record_limits import ENTITY_CHARS
from ..services.import_lines import import_document_parse
from ..services.workspace_export import export_cursor_parse, workspace_export_lines
from ..services.workspace_import import ID_CHOICES, SEQ_CHOICES, workspace_import
from .schema import ErrorSerializer

NDJSON = "application/x-ndjson"


class NDJSONRenderer(BaseRenderer):
    """What ``Accept: application/x-ndjson`` negotiates: the stream itself, and an error as one
    JSON line."""

    media_type = NDJSON
    format = "ndjson"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return (json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


class NDJSONParser(StrictJSONParser):
    """An export's bytes, held to ``MAX_IMPORT_BYTES`` as every body is to its limit; the lines
    are decoded one by one by ``import_document_parse``."""

    media_type = NDJSON
    limit_name = "MAX_IMPORT_BYTES"

    def body_limit(self) -> int:
        return memseek_setting("MAX_IMPORT_BYTES")

    def parse(self, stream, media_type=None, parser_context=None):
        return self.read_limited(stream, parser_context)


class ImportErrorSerializer(ErrorSerializer):
    line = serializers.IntegerField(required=False, min_value=1,
                                    help_text="The export's line (from 1) the problem is on.")


class ImportResultSerializer(serializers.Serializer):
    definitions_added = serializers.IntegerField()
    definitions_unchanged = serializers.IntegerField()
    records_added = serializers.IntegerField()
    records_unchanged = serializers.IntegerField()
    vectors_added = serializers.IntegerField()


def _query(name: str, description: str, schema, **extensions) -> OpenApiParameter:
    return OpenApiParameter(name, schema, OpenApiParameter.QUERY, description=description,
                            extensions=extensions or None)


class ExportView(APIView):
    capability = "read"
    database = "read"
    # Errors are JSON unless the client asks for JSON Lines only; the export itself is always JSON Lines.
    renderer_classes = [JSONRenderer, NDJSONRenderer]

    @extend_schema(
        operation_id="workspace_export", summary="Export the workspace (or one entity) as JSON Lines",
        description="A header line, every catalog definition, every record row (all versions, drafts and "
                    "tombstones) in seq order with its vectors, then an end line. Each definition and record "
                    "line carries `cursor`; pass the last one kept to resume after it.",
        parameters=[_query("entity", "Export only this entity's records (with the whole catalog).",
                           string_schema(max_length=ENTITY_CHARS)),
                    _query("cursor", "The cursor of the last line kept; the export resumes after it.",
                           string_schema(max_length=40), **{ISSUED_BY_SERVER: True})],
        responses={(200, NDJSON): OpenApiResponse(OpenApiTypes.STR, description="The export, one JSON object a "
                                                                                 "line."),
                   401: ErrorSerializer, 403: ErrorSerializer, 422: ErrorSerializer})
    def get(self, request):
        raw = parse_query(request.query_params, allowed=("entity", "cursor"))
        entity = parse_string(raw["entity"], "entity", max_length=ENTITY_CHARS) if "entity" in raw else None
        cursor = export_cursor_parse(raw["cursor"]) if "cursor" in raw else None
        lines = workspace_export_lines(workspace=request.auth, entity=entity, cursor=cursor)
        return StreamingHttpResponse((line.encode("utf-8") for line in lines), content_type=NDJSON)


class ImportView(APIView):
    capability = "write"
    database = "write"
    parser_classes = [NDJSONParser]

    @extend_schema(
        operation_id="workspace_import", summary="Import an export into this workspace, all or nothing",
        description="The body is an export of GET /export (Content-Type application/x-ndjson). One import is "
                    "one transaction; what the workspace already holds identically is left as it is, so a "
                    "second import of the same export changes nothing. A bad line is refused with its path "
                    "(`lines[i]...`) and `line` number, and nothing is written.",
        parameters=[_query("ids", "preserve (default) keeps record ids; remap gives each a new id derived from "
                           "this workspace and the exported id.", {"type": "string", "enum": list(ID_CHOICES)}),
                    _query("seqs", "preserve (default) keeps each record's seq; renumber numbers them on from "
                           "this workspace's last.", {"type": "string", "enum": list(SEQ_CHOICES)})],
        request={NDJSON: OpenApiTypes.STR},
        responses={200: ImportResultSerializer, 401: ErrorSerializer, 403: ErrorSerializer,
                   409: ImportErrorSerializer, 413: ErrorSerializer, 415: ErrorSerializer,
                   422: ImportErrorSerializer})
    def post(self, request):
        raw = parse_query(request.query_params, allowed=("ids", "seqs"))
        ids = _choice(raw, "ids", ID_CHOICES)
        seqs = _choice(raw, "seqs", SEQ_CHOICES)
        body = request.data
        if not isinstance(body, bytes):
            raise fail("", "send the export as the body, Content-Type application/x-ndjson", "import_format")
        lines = body.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        document = import_document_parse(lines)
        result = workspace_import(workspace=request.auth, document=document, ids=ids, seqs=seqs)
        return Response({"definitions_added": result.definitions_added,
                         "definitions_unchanged": result.definitions_unchanged,
                         "records_added": result.records_added, "records_unchanged": result.records_unchanged,
                         "vectors_added": result.vectors_added})


def _choice(raw: dict, name: str, choices: tuple[str, ...]) -> str:
    value = raw.get(name, choices[0])
    if value not in choices:
        raise fail(name, f"{value[:40]!r} is not one of {', '.join(choices)}")
    return value
