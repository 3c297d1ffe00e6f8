"""``POST /memory/search``: a thin view over ``brief.memory_search``. The serializers only
describe shapes for the OpenAPI document; the body is parsed by ``brief_request``."""
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from catalog_app.api.schema import ErrorSerializer, SchemaField, closed_request
from catalog_app.record_limits import ENTITY_CHARS
from memseek_site.conf import memseek_setting
from memseek_site.parsing import string_schema

from .addresses import path_schema
from .api import DATE_BOUND, MemoryHitSerializer
from .brief import memory_search


@closed_request
class MemorySearchRequestSerializer(serializers.Serializer):
    """Documents ``brief_request.parse_memory_search`` with its own limits."""

    query = SchemaField(string_schema(max_length=memseek_setting("MAX_QUERY_CHARS")),
                        help_text="The question in plain words (at most MAX_QUERY_CHARS characters).")
    entity = SchemaField(string_schema(max_length=ENTITY_CHARS), required=False,
                         help_text="Whose memory (default: everyone's).")
    scope = SchemaField(path_schema(), required=False, help_text="A path prefix (passages/<collection>/<entity>, "
                        "facts/<collection>); with a scope the answer is the ranked list.")
    before = SchemaField(DATE_BOUND, required=False, help_text="YYYY-MM-DD (as of that day's end) or a full ISO time "
                                   "with a zone: nothing that occurred later is used, and date words in the "
                                   "question are read against it.")
    after = SchemaField(DATE_BOUND, required=False, help_text="YYYY-MM-DD or a full ISO time with a zone: only memory "
                                  "from then on; the answer is the ranked list.")


class MemoryFactSourceSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    path = serializers.CharField()


class MemoryFactSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    path = serializers.CharField()
    said = serializers.DateField(help_text="The day it occurred.")
    line = serializers.CharField(help_text="(YYYY-MM-DD) the record as stated.")
    derived_from = MemoryFactSourceSerializer(many=True, help_text="The passages it was read from.")


class MemoryKnownSerializer(serializers.Serializer):
    subject = serializers.CharField(help_text="The entity.")
    attribute = serializers.CharField(help_text="The fact's key.")
    line = serializers.CharField(help_text="Every current value as stated, newest first, each with its day.")
    said = serializers.DateField(help_text="The day of the newest value.")
    ids = serializers.ListField(child=serializers.UUIDField())
    paths = serializers.ListField(child=serializers.CharField())


class MemoryWorkedOutSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(["count", "interval", "conflict"])
    line = serializers.CharField()
    ids = serializers.ListField(child=serializers.UUIDField(), help_text="The records it was computed from.")
    value = serializers.IntegerField(required=False, help_text="count: how many.")
    days = serializers.IntegerField(required=False, help_text="interval: days between.")


class MemorySearchResponseSerializer(serializers.Serializer):
    query = serializers.CharField()
    found = serializers.IntegerField(help_text="How many passages are in hits.")
    notes = serializers.ListField(child=serializers.CharField(), required=False, help_text="Brief only.")
    known = MemoryKnownSerializer(many=True, required=False, help_text="Brief only, once facts exist.")
    worked_out = MemoryWorkedOutSerializer(many=True, required=False, help_text="Brief only.")
    facts = MemoryFactSerializer(many=True, required=False)
    hits = MemoryHitSerializer(many=True)
    held = serializers.BooleanField(required=False, help_text="Brief only, when the model filter ran: false means "
                                    "memory does not hold the answer.")


class MemorySearchView(APIView):
    capability = "read"
    database = "read"

    @extend_schema(
        summary="Search one person's memory: the brief, or with scope/after the ranked list",
        request=MemorySearchRequestSerializer,
        responses={200: MemorySearchResponseSerializer, 401: ErrorSerializer, 409: ErrorSerializer,
                   413: ErrorSerializer, 422: ErrorSerializer, 503: ErrorSerializer},
        examples=[OpenApiExample("What does memory hold about Maria's budget?", request_only=True, value={
            "query": "What did Maria say about the Q3 budget last week?", "entity": "contact.maria",
            "before": "2024-05-10"})])
    def post(self, request):
        return Response(memory_search(workspace=request.auth, body=request.data))
