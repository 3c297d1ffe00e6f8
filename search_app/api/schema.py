"""Serializers that describe search shapes in the OpenAPI document. Requests are parsed by
``search_app.engine.spec``; these only document them (the full SearchSpec JSON Schema is served
by ``GET /rank/schema``)."""
from rest_framework import serializers

from catalog_app.api.schema import closed_request
from memseek_site.conf import memseek_setting


@closed_request
class SearchSpecSerializer(serializers.Serializer):
    q = serializers.CharField(required=False, max_length=memseek_setting("MAX_QUERY_CHARS"),
                              help_text="Query text; required for vector, text and hybrid.")
    mode = serializers.ChoiceField(["vector", "text", "hybrid", "recent", "structured"], required=False)
    scope = serializers.JSONField(required=False, help_text="collections, collection_versions, entities, types, "
                                  "status, keyed, versions, occurred_after, occurred_before, depth_lte")
    where = serializers.JSONField(required=False, help_text="{field: {eq|in|gt|gte|lt|lte|exists|contains_any|"
                                  "contains_all: operand}} over declared filterable fields")
    order_by = serializers.JSONField(required=False, help_text="[{field, direction}] for structured mode")
    k = serializers.IntegerField(required=False, min_value=1, max_value=100, default=20)
    include = serializers.ListField(child=serializers.CharField(), required=False)
    fields = serializers.ListField(child=serializers.CharField(), required=False, max_length=16)
    annotations = serializers.ListField(child=serializers.CharField(), required=False, max_length=16)
    render = serializers.BooleanField(required=False, default=False)
    fence = serializers.JSONField(required=False, help_text="{tag, preamble}; needs render")
    rank = serializers.JSONField(required=False, help_text="Rank expression, e.g. [sum, [...]]")
    rerank = serializers.JSONField(required=False)
    graph_boost = serializers.JSONField(required=False)
    params = serializers.JSONField(required=False, help_text="{candidates: 1-1000}")
    sources = serializers.JSONField(required=False, help_text="1-8 named searches combined with fuse")
    fuse = serializers.JSONField(required=False, help_text="{kind: rrf, rank_constant: 1-1000}")
    boost = serializers.JSONField(required=False)


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
