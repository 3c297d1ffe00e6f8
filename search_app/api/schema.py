"""Serializers that describe search shapes in the OpenAPI document. Requests are parsed by
``search_app.engine.spec``; the request body's schema is that parser's JSON Schema
(``engine.spec_schema``), also served by ``GET /rank/schema``."""
from drf_spectacular.extensions import OpenApiSerializerExtension
from rest_framework import serializers

from catalog_app.api.schema import json_schema_components
from memseek_site.conf import memseek_setting

from ..engine.spec_schema import RANK_EXPRESSION_ID, search_spec_schema


class SearchSpecSerializer(serializers.Serializer):
    """The body of ``POST /search``: documented by ``SearchSpecSchema`` from the parser's own
    JSON Schema, never field by field."""


class SearchSpecSchema(OpenApiSerializerExtension):
    """The SearchSpec in the OpenAPI document is ``engine.spec_schema``'s JSON Schema (the one the
    parser is tested against, served by ``GET /rank/schema`` too), with this deployment's
    ``MAX_QUERY_CHARS``; its definitions and the rank grammar become components of their own."""

    target_class = SearchSpecSerializer

    def map_serializer(self, auto_schema, direction):
        schema = search_spec_schema(max_query_chars=memseek_setting("MAX_QUERY_CHARS"))
        return json_schema_components(auto_schema, "SearchSpec", schema,
                                      resources={RANK_EXPRESSION_ID: "RankExpression"})


class SearchHitSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    rank = serializers.IntegerField()
    score = serializers.FloatField(allow_null=True)
    rank_score = serializers.FloatField(required=False)
    source_ranks = serializers.DictField(child=serializers.IntegerField(), required=False)
    # Present when named in the SearchSpec's include, fields or annotations.
    text = serializers.CharField(required=False, help_text="Middle-truncated to INCLUDE_TEXT_LIMIT characters.")
    scores = serializers.DictField(child=serializers.FloatField(), required=False)
    collection = serializers.CharField(required=False)
    collection_version = serializers.IntegerField(required=False)
    entity = serializers.CharField(required=False)
    type = serializers.CharField(required=False)
    key = serializers.CharField(required=False, allow_null=True)
    status = serializers.CharField(required=False)
    depth = serializers.IntegerField(required=False)
    occurred_at = serializers.DateTimeField(required=False)
    created_at = serializers.DateTimeField(required=False)
    run_id = serializers.UUIDField(required=False, allow_null=True)
    fields = serializers.DictField(required=False, help_text="Projected declared fields by name.")
    annotations = serializers.DictField(required=False, help_text="Processor outputs by name (null: none yet).")


class SearchResponseSerializer(serializers.Serializer):
    hits = SearchHitSerializer(many=True)
    ranking = serializers.JSONField()
    rendered = serializers.CharField(allow_null=True)
    truncated = serializers.BooleanField()
    backend = serializers.JSONField(help_text="{name, layout, candidate_count}; a list with source per search "
                                    "when sources are combined")
    profiles = serializers.ListField(child=serializers.CharField())
