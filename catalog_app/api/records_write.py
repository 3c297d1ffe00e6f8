"""``POST /records``: atomic batch ingest."""
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from memseek_site.conf import memseek_setting
from memseek_site.parsing import PUBLIC_NAME, parse_object
from memseek_site.tracing import RECORD_COUNT, memory_operation

from ..record_limits import DEDUPE_KEY_CHARS, ENTITY_CHARS, KEY_CHARS
from ..services.record_ingest import record_ingest_batch
from .schema import QUOTA_EXCEEDED, ErrorSerializer, closed_request


@closed_request
class RecordInputSerializer(serializers.Serializer):
    entity = serializers.CharField(max_length=ENTITY_CHARS, help_text="Whose memory; never '*'.")
    collection = serializers.RegexField(PUBLIC_NAME.pattern, required=False, default="main",
                                        help_text="A loaded collection of the workspace.")
    collection_version = serializers.IntegerField(required=False, min_value=1,
                                                  help_text="Default: the active version.")
    type = serializers.RegexField(PUBLIC_NAME.pattern,
                                  help_text="Author vocabulary; 'run' and 'erasure' are reserved.")
    key = serializers.CharField(required=False, allow_null=True, max_length=KEY_CHARS,
                                help_text="Required in keyed collections, forbidden in event collections.")
    text = serializers.CharField(required=False, allow_null=True, allow_blank=True,
                                 max_length=memseek_setting("MAX_TEXT_CHARS"),
                                 help_text="Canonical text; rendered from text_projection when omitted.")
    content = serializers.DictField(required=False, help_text="Validated against the collection's JSON Schema.")
    status = serializers.ChoiceField(choices=["active", "draft"], required=False, default="active")
    dedupe_key = serializers.CharField(required=False, allow_null=True, max_length=DEDUPE_KEY_CHARS)
    derived_from = serializers.ListField(child=serializers.UUIDField(), required=False, max_length=256)
    tombstone = serializers.BooleanField(required=False, default=False)
    occurred_at = serializers.DateTimeField(required=False, help_text="ISO 8601 with a timezone; default now.")
    scores = serializers.DictField(child=serializers.FloatField(), required=False)
    annotations = serializers.DictField(required=False)


@closed_request
class RecordBatchSerializer(serializers.Serializer):
    records = serializers.ListField(child=RecordInputSerializer(), min_length=1,
                                    max_length=memseek_setting("MAX_BATCH"))


class IngestOutcomeSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    id = serializers.UUIDField()
    ready = serializers.BooleanField()


class IngestResultSerializer(serializers.Serializer):
    inserted = IngestOutcomeSerializer(many=True)
    duplicates = IngestOutcomeSerializer(many=True)


class RecordBatchView(APIView):
    capability = "write"
    database = "write"

    @extend_schema(
        summary="Write a batch of 1-100 records atomically",
        request=RecordBatchSerializer,
        responses={200: IngestResultSerializer, 401: ErrorSerializer, 404: ErrorSerializer,
                   409: ErrorSerializer, 413: QUOTA_EXCEEDED, 422: ErrorSerializer},
        examples=[OpenApiExample("One event", request_only=True, value={"records": [
            {"entity": "contact.maria", "collection": "main", "type": "event",
             "text": "Maria confirmed the Q3 budget."}]})],
    )
    def post(self, request):
        body = parse_object(request.data, "", allowed={"records"}, required={"records"})
        items = body["records"]
        withdrawals = isinstance(items, list) and bool(items) and all(
            isinstance(item, dict) and item.get("tombstone") is True for item in items)
        with memory_operation("delete_memory" if withdrawals else "update_memory", store_id=request.auth.name) as span:
            result = record_ingest_batch(workspace=request.auth, items=items)
            span.set_attribute(RECORD_COUNT, len(result.inserted) + len(result.duplicates))

        def rows(outcomes):
            return [{"index": o.index, "id": str(o.id), "ready": o.ready} for o in outcomes]

        return Response({"inserted": rows(result.inserted), "duplicates": rows(result.duplicates)})
