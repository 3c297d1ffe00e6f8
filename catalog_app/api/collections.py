"""``GET /collections``: every loaded collection version of the caller's catalog."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import selectors
from .reads import parse_no_query
from .schema import ErrorSerializer


class CollectionFieldSerializer(serializers.Serializer):
    path = serializers.CharField(help_text="content.<name>... or annotations.<processor>...")
    type = serializers.JSONField(help_text='A type name, or a one-element list such as ["string"] for arrays.')
    filter = serializers.BooleanField()
    sort = serializers.BooleanField()
    project = serializers.BooleanField()


class CollectionContractSerializer(serializers.Serializer):
    name = serializers.CharField()
    version = serializers.IntegerField()
    hash = serializers.CharField(help_text="SHA-256 of the whole normalised definition.")
    contract_hash = serializers.CharField(help_text="SHA-256 of the record contract; stored on every record.")
    active = serializers.BooleanField()
    mode = serializers.ChoiceField(choices=["event", "keyed", "mixed"])
    schema = serializers.JSONField()
    text_projection = serializers.CharField(allow_null=True)
    fields = serializers.DictField(child=CollectionFieldSerializer())
    required_processors = serializers.ListField(child=serializers.CharField())
    optional_processors = serializers.ListField(child=serializers.CharField())
    search_profile = serializers.CharField(help_text="Effective profile.")
    declared_search_profile = serializers.CharField()
    allowed_search_profiles = serializers.ListField(child=serializers.CharField())


class CollectionListSerializer(serializers.Serializer):
    collections = CollectionContractSerializer(many=True)


class CollectionListView(APIView):
    capability = "read"
    database = "read"

    @extend_schema(
        operation_id="collection_list", summary="Every loaded collection version",
        description="Sorted by name, then version.",
        responses={200: CollectionListSerializer, 401: ErrorSerializer,
                   422: ErrorSerializer})
    def get(self, request):
        parse_no_query(request.query_params)
        return Response(selectors.collection_list(workspace=request.auth))
