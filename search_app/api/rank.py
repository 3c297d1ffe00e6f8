"""``GET /rank/schema``."""
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from catalog_app.api.schema import ErrorSerializer
from memseek_site.parsing import parse_query

from ..rank_schema import rank_schema

_RankSchema = inline_serializer("RankSchema", {
    "rank": serializers.JSONField(), "result_scores": serializers.JSONField(), "search_spec": serializers.JSONField(),
    "rank_hash": serializers.CharField(),
    "default_source": serializers.ChoiceField(
        choices=["catalog", "builtin"], help_text="catalog: the workspace's catalog loaded conf/rank_default.yaml; "
        "builtin: it never did, and the engine's built-in formula ranks"),
    "default_warning": serializers.CharField(
        allow_null=True, help_text="null when default_source is catalog; otherwise a sentence saying the built-in "
        "formula ranks and how to replace it"),
    "default_candidates": serializers.IntegerField(),
    "variants": serializers.JSONField(), "profiles": serializers.JSONField(), "bindings": serializers.JSONField(),
    "backends": serializers.JSONField(),
    "ranking": serializers.JSONField(help_text="{bm25_v1: {k1, b, idf, score, tokens, ties, route, capacity: "
                                     "{scan_records_max, scan_bytes_max, retrieval_slots}}, en_v1: {signal, k1, b, "
                                     "idf, score, tokens, stopwords, stemmer, ties, route}}")})


class RankSchemaView(APIView):
    capability = "read"
    database = "read"

    @extend_schema(summary="Rank grammar, active defaults and their hash, profiles, capabilities, SearchSpec schema",
                   responses={200: _RankSchema, 401: ErrorSerializer, 422: ErrorSerializer})
    def get(self, request):
        parse_query(request.query_params, allowed=())
        return Response(rank_schema(workspace=request.auth))
