"""``POST /records/{id}/approve`` and ``POST /records/{id}/reject``: draft review.

Thin: parse the id and the (empty) body, call one review service with the actor
``api:<workspace name>``, return the written record.
"""
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from memseek_site.parsing import parse_object

from ..selectors_review import review_row
from ..services.review import draft_approve, draft_reject
from .reads import parse_no_query, parse_record_id
from .schema import QUOTA_EXCEEDED, ErrorSerializer


class ReviewRecordSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    seq = serializers.IntegerField(help_text="The workspace's own ingestion ordinal (1, 2, 3, ... in this workspace).")
    entity = serializers.CharField()
    collection = serializers.CharField()
    collection_version = serializers.IntegerField()
    key = serializers.CharField()
    type = serializers.CharField()
    status = serializers.ChoiceField(choices=["active", "draft"])
    text = serializers.CharField(allow_blank=True)
    content = serializers.JSONField()
    scores = serializers.DictField(child=serializers.FloatField())
    annotations = serializers.JSONField()
    tombstone = serializers.BooleanField()
    ready = serializers.BooleanField()
    depth = serializers.IntegerField()
    derived_from = serializers.ListField(child=serializers.UUIDField())
    occurred_at = serializers.DateTimeField()
    created_at = serializers.DateTimeField()


class ReviewResultSerializer(serializers.Serializer):
    record = ReviewRecordSerializer(help_text="The record the review wrote.")
    draft_id = serializers.UUIDField(help_text="The reviewed draft (never changed).")


_ID = OpenApiParameter("id", OpenApiTypes.UUID, OpenApiParameter.PATH,
                       description="The draft's record id; a malformed one is 422 invalid_id.")
_RESPONSES = {200: ReviewResultSerializer, 401: ErrorSerializer, 404: ErrorSerializer, 409: ErrorSerializer,
              413: QUOTA_EXCEEDED, 422: ErrorSerializer}


def _parse_empty_body(request) -> None:
    """The body must be absent or ``{}``."""
    data = request.data
    if hasattr(data, "dict"):  # a form or empty body arrives as a QueryDict
        data = data.dict()
    parse_object(data, "", allowed=())


def _respond(record, draft_id) -> Response:
    return Response({"record": review_row(record), "draft_id": str(draft_id)})


class RecordApproveView(APIView):
    capability = "review"
    database = "write"

    @extend_schema(
        operation_id="record_approve", summary="Approve a pending draft",
        description="Writes the draft's active successor (same slot, text, content and client outputs; it cites the "
                    "draft and the active value it replaces). A draft tombstone that proposes a retraction writes an "
                    "active tombstone. 409 promotion_stale when a newer draft exists or the active value changed "
                    "after the draft was written; 409 not_a_draft, draft_not_keyed, nothing_to_retract.",
        parameters=[_ID], request=None, responses=_RESPONSES)
    def post(self, request, id: str):  # the spec names the segment {id}
        draft_id = parse_record_id(id)
        parse_no_query(request.query_params)
        _parse_empty_body(request)
        record = draft_approve(workspace=request.auth, draft_id=draft_id, actor=f"api:{request.auth.name}")
        return _respond(record, draft_id)


class RecordRejectView(APIView):
    capability = "review"
    database = "write"

    @extend_schema(
        operation_id="record_reject", summary="Reject a pending draft",
        description="Withdraws the draft with a draft-lane tombstone citing it; the active value is untouched. "
                    "409 promotion_stale when the draft is no longer the pending draft of its slot.",
        parameters=[_ID], request=None, responses=_RESPONSES)
    def post(self, request, id: str):
        draft_id = parse_record_id(id)
        parse_no_query(request.query_params)
        _parse_empty_body(request)
        record = draft_reject(workspace=request.auth, draft_id=draft_id, actor=f"api:{request.auth.name}")
        return _respond(record, draft_id)
