"""``POST /search/lexical``: a thin view over ``retrieval_app.lexical.service``.

The route holds its JSON bodies to ``LEXICAL_BODY_BYTES`` (lexical-search.md: 65,536 bytes,
``413 body_too_large``), and answers every request problem, the shared body rules included
(syntax, depth, duplicate keys, NUL, ranges), with ``400`` as the page says: a body-rule error
keeps its message and path under the code ``lexical_request``. The serializers only describe
shapes for the OpenAPI document; the body is parsed by ``retrieval_app.lexical.request``.
"""
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from catalog_app.api.reads import RecordDereferenceSerializer
from catalog_app.bm25_terms import TERM_CHARACTER
from catalog_app.api.schema import ErrorSerializer, SchemaField, closed_request
from memseek_site.conf import memseek_setting
from memseek_site.errors import ApiError
from memseek_site.json_body import StrictJSONParser
from memseek_site.parsing import PUBLIC_NAME, int_schema, string_schema

from . import request
from .service import lexical_search
from .slots import RetrievalBusy

LEXICAL_BODY_BYTES = 65_536


class LexicalJSONParser(StrictJSONParser):
    limit_name = "the lexical route's limit"

    def body_limit(self) -> int:
        return LEXICAL_BODY_BYTES

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except ApiError as error:
            if error.status != 422:
                raise
            raise error.relocated(error.path, code="lexical_request") from None


# The scope is the SearchSpec's (``parse_scope``), documented by the SearchSpec JSON Schema.
_SEARCH_SCOPE = {"$ref": "#/components/schemas/SearchSpec.scope"}


@closed_request
class LexicalQuerySerializer(serializers.Serializer):
    text = SchemaField({**string_schema(max_length=memseek_setting("MAX_QUERY_CHARS")), "pattern": TERM_CHARACTER},
                       help_text="At least one term under query.analyzer (bm25_v1: a run of letters or "
                                 "digits; en_v1: a word of two or more characters, not a stopword).")
    limit = SchemaField(int_schema(minimum=1, maximum=request.MAX_LIMIT, default=request.DEFAULT_LIMIT),
                        required=False)
    scan_limit = SchemaField(int_schema(minimum=1, maximum=memseek_setting("LEXICAL_SCAN_ROWS_MAX"),
                                        default=request.DEFAULT_SCAN_LIMIT), required=False,
                             help_text="Source rows to admit; at most LEXICAL_SCAN_ROWS_MAX.")
    scan_bytes_limit = SchemaField(int_schema(minimum=1, maximum=memseek_setting("LEXICAL_SCAN_BYTES_MAX"),
                                              default=request.DEFAULT_SCAN_BYTES_LIMIT), required=False,
                                   help_text="Source bytes to admit; at most LEXICAL_SCAN_BYTES_MAX.")
    after = SchemaField({"type": ["string", "null"], "format": "uuid"}, required=False,
                        help_text="Exclusive source-row cursor: the previous page's next_after.")
    type = SchemaField({**string_schema(pattern=PUBLIC_NAME), "type": ["string", "null"]}, required=False,
                       help_text="One record type.")
    tag = SchemaField({**string_schema(max_length=request.TAG_CHARS), "type": ["string", "null"]}, required=False,
                      help_text="A value of the collection's declared `tags` field.")
    analyzer = SchemaField({"type": "string", "enum": list(request.ANALYZERS), "default": "bm25_v1"}, required=False,
                           help_text="The ranking profile: bm25_v1 (default) or en_v1, stemmed English terms (the "
                                     "bm25_en signal's); both in GET /rank/schema's ranking catalog.")


@closed_request
class LexicalRequestSerializer(serializers.Serializer):
    contract_version = SchemaField({"type": "integer", "const": request.CONTRACT_VERSION})
    mode = SchemaField({"type": "string", "const": request.MODE})
    scope = SchemaField(_SEARCH_SCOPE)
    query = LexicalQuerySerializer()


class LexicalHitSerializer(serializers.Serializer):
    record = RecordDereferenceSerializer()
    score = serializers.FloatField(help_text="Positive raw BM25; orders results, not a probability.")


class LexicalPageSerializer(serializers.Serializer):
    hits = LexicalHitSerializer(many=True)
    matched_records = serializers.IntegerField()
    corpus_records = serializers.IntegerField()
    scanned_records = serializers.IntegerField()
    scanned_bytes = serializers.IntegerField()
    exhaustive = serializers.BooleanField()
    next_after = serializers.UUIDField(allow_null=True)


class LexicalTimingSerializer(serializers.Serializer):
    retrieval_micros = serializers.IntegerField()


class LexicalResponseSerializer(serializers.Serializer):
    contract_version = serializers.IntegerField()
    scope = serializers.JSONField()
    mode = serializers.CharField()
    ranking_version = serializers.CharField()
    page = LexicalPageSerializer()
    timing = LexicalTimingSerializer()


class LexicalSearchView(APIView):
    capability = "read"
    database = "read"
    parser_classes = [LexicalJSONParser]

    @extend_schema(
        summary="Exact BM25 (bm25_v1) over a scope, with scan budgets, coverage and a source-row cursor",
        request=LexicalRequestSerializer,
        responses={200: LexicalResponseSerializer, 400: ErrorSerializer, 401: ErrorSerializer,
                   413: ErrorSerializer, 415: ErrorSerializer, 500: ErrorSerializer,
                   503: OpenApiResponse(ErrorSerializer, description="retrieval_busy, with Retry-After")},
        examples=[OpenApiExample("Identifiers and error codes", request_only=True, value={
            "contract_version": 1, "mode": "lexical", "scope": {"collections": ["main"]},
            "query": {"text": "ZX17 retry failure", "limit": 10, "scan_limit": 10000, "scan_bytes_limit": 8388608,
                      "after": None, "type": None, "tag": None}})])
    def post(self, request):
        return Response(lexical_search(workspace=request.auth, body=request.data))

    def handle_exception(self, exc):
        response = super().handle_exception(exc)
        if isinstance(exc, RetrievalBusy):
            response["Retry-After"] = str(exc.retry_after)
        return response
