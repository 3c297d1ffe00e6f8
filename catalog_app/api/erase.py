"""``DELETE /records/{id}`` and ``POST /erase``: hard deletes (``services.record_erase``).

Thin: parse the id or the body strictly into an ``ErasureTarget`` and the dry-run flag, call the
one service with the caller's key id as the actor, return the counts.
"""
from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from memseek_site.parsing import PUBLIC_NAME, fail, parse_bool, parse_object, parse_query, parse_string

from ..record_limits import ENTITY_CHARS
from ..services.record_erase import ErasureResult, ErasureTarget, records_erase
from .reads import RecordDetailView, parse_record_id
from .schema import ErrorSerializer, closed_request

_COUNTS_HELP = ("Rows of each kind the erasure removes (records, drafts and derived records among them, "
                "embeddings, index_documents, review_audits, record_utilities) or marks (receipts_marked).")


class ErasureResultSerializer(serializers.Serializer):
    dry_run = serializers.BooleanField(help_text="True: nothing was changed, the counts say what would go.")
    counts = serializers.DictField(child=serializers.IntegerField(min_value=0), help_text=_COUNTS_HELP)
    audit_id = serializers.IntegerField(allow_null=True, help_text="The erasure's audit row (null for a dry run).")


@closed_request
class EraseRequestSerializer(serializers.Serializer):
    entity = serializers.CharField(max_length=ENTITY_CHARS, help_text="The entity to forget, exactly as written.")
    collection = serializers.RegexField(PUBLIC_NAME.pattern, required=False,
                                       help_text="Only this collection's records of the entity (default: all).")
    dry_run = serializers.BooleanField(required=False, default=False, help_text="Count, change nothing.")


ERASE_RESPONSES = {200: ErasureResultSerializer, 401: ErrorSerializer, 404: ErrorSerializer,
                   422: ErrorSerializer, 503: ErrorSerializer}
DRY_RUN_PARAMETER = OpenApiParameter("dry_run", OpenApiTypes.BOOL, OpenApiParameter.QUERY,
                                     description="true: count what would go, change nothing (default false).")


def parse_delete_query(params) -> bool:
    """``DELETE /records/{id}``'s query string: only ``dry_run`` (true|false)."""
    raw = parse_query(params, allowed=("dry_run",))
    value = raw.get("dry_run", "false")
    if value not in ("true", "false"):
        raise fail("dry_run", f"must be true or false, got {value!r}")
    return value == "true"


def parse_erase_body(data) -> tuple[ErasureTarget, bool]:
    """``POST /erase``'s body: ``{"entity", "collection"?, "dry_run"?}``, nothing else."""
    if hasattr(data, "dict"):  # an empty or form body arrives as a QueryDict
        data = data.dict()
    body = parse_object(data, "", allowed=("entity", "collection", "dry_run"), required=("entity",))
    entity = parse_string(body["entity"], "entity", max_length=ENTITY_CHARS)
    if entity == "*":
        raise fail("entity", "'*' names no entity; name the one entity to forget")
    collection = parse_string(body["collection"], "collection", pattern=PUBLIC_NAME) if "collection" in body else None
    dry_run = parse_bool(body["dry_run"], "dry_run") if "dry_run" in body else False
    return ErasureTarget(entity=entity, collection=collection), dry_run


def erasure_response(result: ErasureResult) -> Response:
    return Response({"dry_run": result.dry_run, "counts": result.counts, "audit_id": result.audit_id})


class RecordView(RecordDetailView):
    """``GET /records/{id}`` (``RecordDetailView``) and ``DELETE /records/{id}`` on one path; the
    delete needs ``write`` and runs on the primary."""

    capability_by_method = {"DELETE": "write"}
    database_by_method = {"DELETE": "write"}

    @extend_schema(
        operation_id="record_delete", summary="Forget one record for good",
        description="Hard delete: the record with every version and draft of its slot, every record derived from "
                    "any of them, their vectors, lexical index postings and statistics, review audits and learned "
                    "utility; receipts keep the ids only, marked erased. Audited (key id, time, counts). "
                    "dry_run=true counts and changes nothing. 404 record_not_found for an unknown id and for "
                    "another workspace's id alike.",
        parameters=[OpenApiParameter("id", OpenApiTypes.UUID, OpenApiParameter.PATH,
                                     description="Record id; a malformed one is 422 invalid_id."), DRY_RUN_PARAMETER],
        request=None, responses=ERASE_RESPONSES)
    def delete(self, request, id: str):  # the spec names the segment {id}
        record_id = parse_record_id(id)
        dry_run = parse_delete_query(request.query_params)
        return erasure_response(records_erase(workspace=request.auth, target=ErasureTarget(record_id=record_id),
                                              actor_key_id=request.user.key_id, dry_run=dry_run))


class EraseView(APIView):
    capability = "write"
    database = "write"

    @extend_schema(
        operation_id="entity_erase", summary="Forget one entity for good",
        description="Hard delete of every record of the entity in this workspace (or in one collection), with every "
                    "version, draft and derived record, their vectors, lexical index postings and statistics, review "
                    "audits and learned utility; receipts keep the ids only, marked erased. Audited (key id, time, "
                    "counts; never the entity). dry_run counts and changes nothing. An entity with no records "
                    "erases nothing (all counts 0). Unknown keys are 422 request_schema with their path.",
        request=EraseRequestSerializer, responses={code: body for code, body in ERASE_RESPONSES.items() if code != 404},
        examples=[OpenApiExample("Count first", request_only=True,
                                 value={"entity": "contact.maria", "dry_run": True})])
    def post(self, request):
        parse_query(request.query_params, allowed=())
        target, dry_run = parse_erase_body(request.data)
        return erasure_response(records_erase(workspace=request.auth, target=target,
                                              actor_key_id=request.user.key_id, dry_run=dry_run))
