"""``POST /retrieve`` and ``GET /receipts/{id}``: thin views over ``retrieval_app.service``.

The serializers only describe shapes for the OpenAPI document; the body is parsed by
``retrieval_app.request`` (strict, camelCase paths).
"""
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from catalog_app.api.schema import ErrorSerializer, SchemaField, closed_request
from catalog_app.record_limits import ENTITY_CHARS
from memseek_site.tracing import RECORD_COUNT, memory_operation
from search_app.stage_spans import request_trace
from memseek_site.conf import memseek_setting
from memseek_site.parsing import PUBLIC_NAME, int_schema, parse_query, parse_uuid, string_schema

from . import evaluate_request, feedback
from . import request as retrieve_request
from .evaluation import evaluation_run
from .feedback import receipt_feedback_create
from .service import receipt_get, retrieve
from .settings import MAX_BUDGET, MIN_BUDGET


_NAMES = {"type": "array", "items": string_schema(pattern=PUBLIC_NAME), "minItems": 1,
          "maxItems": retrieve_request.MAX_LIST, "uniqueItems": True}
_TAG_SCALAR = {"type": ["string", "number", "boolean"]}


@closed_request
class RetrieveRequestSerializer(serializers.Serializer):
    """Documents ``retrieval_app.request.parse_retrieve_request`` with its own limits."""

    cross_member_rules = [
        {"not": {"required": ["entity", "entities"]}, "description": "entity or entities, not both"},
        {"not": {"required": ["mode", "rerank"], "properties": {"mode": {"const": "deterministic"},
                                                                "rerank": {"const": True}}},
         "description": "mode deterministic never reranks (400 mode_conflict)"},
    ]
    query = SchemaField(string_schema(max_length=memseek_setting("MAX_QUERY_CHARS")),
                        help_text="What to recall (required, at most MAX_QUERY_CHARS characters).")
    entity = SchemaField(string_schema(max_length=ENTITY_CHARS), required=False,
                         help_text="One entity; or send entities.")
    entities = SchemaField({**_NAMES, "items": string_schema(max_length=ENTITY_CHARS)}, required=False)
    collections = SchemaField(_NAMES, required=False, help_text="Default: every collection of the workspace.")
    types = SchemaField(_NAMES, required=False)
    tags = SchemaField({"type": "object", "maxProperties": retrieve_request.MAX_TAG_FIELDS,
                        "propertyNames": string_schema(pattern=PUBLIC_NAME),
                        "additionalProperties": {"anyOf": [_TAG_SCALAR, {"type": "array", "minItems": 1,
                                                                         "maxItems": retrieve_request.MAX_LIST,
                                                                         "items": _TAG_SCALAR}]}},
                       required=False, help_text="{declared field: value | [values]}: eq / in (contains_any on "
                       "list fields); collections not declaring a field cannot match.")
    agentId = SchemaField(string_schema(max_length=retrieve_request.AGENT_CHARS), required=False,
                          help_text="Private records are visible to their owner only.")
    topN = SchemaField(int_schema(minimum=1, maximum=retrieve_request.MAX_TOP_N,
                                  default=retrieve_request.DEFAULT_TOP_N), required=False)
    tokenBudget = SchemaField(int_schema(minimum=MIN_BUDGET, maximum=MAX_BUDGET), required=False,
                              help_text="Default: the workspace setting retrieval.tokenBudget (4000).")
    mode = SchemaField({"type": "string", "enum": list(retrieve_request.MODES), "default": "assisted"}, required=False)
    rerank = serializers.BooleanField(required=False, default=False,
                                      help_text="Rerank with the cheap model (assisted mode only; else 400).")
    raw = serializers.BooleanField(required=False, default=False,
                                   help_text="Skip the score floor and the budget; topN is honoured literally.")
    includeSuperseded = serializers.BooleanField(required=False, default=False)
    excludeSuperseded = serializers.BooleanField(required=False, help_text="Accepted for compatibility; ignored.")
    asOf = SchemaField({"type": "string", "format": "date-time"}, required=False,
                       help_text="Slice the store at this instant.")
    asOfAxis = SchemaField({"type": "string", "enum": list(retrieve_request.AXES), "default": "valid"}, required=False)
    explain = serializers.BooleanField(required=False, default=False)


class RetrievedEntrySerializer(serializers.Serializer):
    id = serializers.UUIDField()
    text = serializers.CharField()
    rendered = serializers.CharField(help_text="The compact, escaped row counted by tokens.")
    entity = serializers.CharField()
    collection = serializers.CharField()
    type = serializers.CharField()
    key = serializers.CharField(allow_null=True)
    score = serializers.FloatField(allow_null=True, help_text="Null for policy records.")
    tokens = serializers.IntegerField()
    provenance = serializers.JSONField(help_text="{sourceKind, sourceRef, extractionMethod}")
    validFrom = serializers.DateTimeField()
    validTo = serializers.DateTimeField(allow_null=True)
    recordedAt = serializers.DateTimeField()
    recordedUntil = serializers.DateTimeField(allow_null=True)
    supersededAt = serializers.DateTimeField(allow_null=True, required=False)
    supersededBy = serializers.UUIDField(allow_null=True, required=False)
    policy = serializers.JSONField(help_text="{visibility, ownerAgentId, classification}")
    version = serializers.JSONField(help_text="{collection, collectionVersion, seq}")
    trust = serializers.JSONField(help_text="{depth, ready, derived, corroboration, confidence, score}")
    explanation = serializers.JSONField(required=False)


class MemoryContextSectionsSerializer(serializers.Serializer):
    policies = RetrievedEntrySerializer(many=True)
    facts = RetrievedEntrySerializer(many=True)
    events = RetrievedEntrySerializer(many=True)
    derived = RetrievedEntrySerializer(many=True)


class MemoryContextSerializer(serializers.Serializer):
    receiptId = serializers.UUIDField()
    mode = serializers.CharField()
    asOf = serializers.DateTimeField(allow_null=True)
    asOfAxis = serializers.CharField()
    sections = MemoryContextSectionsSerializer()
    compilation = serializers.JSONField()
    diagnostics = serializers.JSONField(required=False)


_Receipt = inline_serializer("Receipt", {
    "id": serializers.UUIDField(), "createdAt": serializers.DateTimeField(), "requestHash": serializers.CharField(),
    "mode": serializers.CharField(), "raw": serializers.BooleanField(),
    "tokenBudget": serializers.IntegerField(allow_null=True), "totalTokens": serializers.IntegerField(),
    "sections": serializers.JSONField(), "items": serializers.JSONField()})
_BudgetError = inline_serializer("ContextBudgetTooSmall", {
    "error": serializers.CharField(), "detail": serializers.CharField(), "path": serializers.CharField(required=False),
    "requestedTokens": serializers.IntegerField(required=False),
    "requiredTokens": serializers.IntegerField(required=False)})


class RetrieveView(APIView):
    capability = "read"
    database = "read"

    @extend_schema(
        summary="Recall a token-budgeted MemoryContext", request=RetrieveRequestSerializer,
        responses={200: MemoryContextSerializer, 400: ErrorSerializer, 401: ErrorSerializer, 409: ErrorSerializer,
                   422: _BudgetError, 503: ErrorSerializer},
        examples=[OpenApiExample("Recall for one customer", request_only=True, value={
            "query": "What did Maria say about the Q3 budget?", "entity": "contact.maria", "tokenBudget": 2000,
            "explain": True})])
    def post(self, request):
        body = request.data
        query = body.get("query") if isinstance(body, dict) and isinstance(body.get("query"), str) else None
        with memory_operation("search_memory", store_id=request.auth.name, query=query) as span:
            result = retrieve(workspace=request.auth, request=body, trace=request_trace())
            span.set_attribute(RECORD_COUNT, sum(section["included"]
                                                 for section in result["compilation"]["sections"].values()))
        return Response(result)


class ReceiptView(APIView):
    capability = "read"
    database = "read"

    @extend_schema(
        summary="What one retrieval delivered",
        parameters=[OpenApiParameter("id", OpenApiTypes.UUID, OpenApiParameter.PATH,
                                     description="Receipt id; a malformed one is 422 invalid_id.")],
        responses={200: _Receipt, 401: ErrorSerializer, 404: ErrorSerializer, 422: ErrorSerializer})
    def get(self, request, id: str):
        parse_query(request.query_params, allowed=())
        return Response(receipt_get(workspace=request.auth, receipt_id=parse_uuid(id, "id", code="invalid_id")))


@closed_request
class FeedbackRequestSerializer(serializers.Serializer):
    """Documents ``retrieval_app.feedback.parse_feedback_request`` with its own limits."""

    outcome = SchemaField({"type": "string", "enum": list(feedback.OUTCOME_SCORES)})
    score = SchemaField({"type": "number", "minimum": 0, "maximum": 1}, required=False,
                        help_text="Default: success 1, partial 0.5, failure 0, irrelevant 0.")
    recordIds = SchemaField({"type": "array", "items": {"type": "string", "format": "uuid"}, "minItems": 1,
                             "maxItems": feedback.MAX_RECORD_IDS, "uniqueItems": True}, required=False,
                            help_text="Delivered records of the receipt the outcome is about (default: every "
                            "delivered record); others are 422 record_not_in_receipt.")
    comment = SchemaField(string_schema(max_length=feedback.COMMENT_CHARS, allow_blank=True), required=False)
    dedupeKey = SchemaField(string_schema(max_length=feedback.DEDUPE_CHARS), required=False,
                            help_text="Per receipt: the same key and payload is idempotent; a different "
                            "payload is 409 dedupe_conflict.")


class FeedbackSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    receiptId = serializers.UUIDField()
    outcome = serializers.CharField()
    score = serializers.FloatField()
    recordIds = serializers.ListField(child=serializers.UUIDField())
    comment = serializers.CharField(allow_blank=True)
    dedupeKey = serializers.CharField(allow_null=True)
    createdAt = serializers.DateTimeField()
    deduplicated = serializers.BooleanField(help_text="True when dedupeKey matched stored feedback (HTTP 200).")


class FeedbackView(APIView):
    capability = "write"
    database = "write"

    @extend_schema(
        summary="Report the outcome of a retrieval; feeds value-aware selection",
        parameters=[OpenApiParameter("id", OpenApiTypes.UUID, OpenApiParameter.PATH, description="Receipt id.")],
        request=FeedbackRequestSerializer,
        responses={201: FeedbackSerializer, 200: FeedbackSerializer, 401: ErrorSerializer, 404: ErrorSerializer,
                   409: ErrorSerializer, 422: ErrorSerializer},
        examples=[OpenApiExample("The answer worked", request_only=True, value={
            "outcome": "success", "dedupeKey": "run-42"})])
    def post(self, request, id: str):
        payload, created = receipt_feedback_create(workspace=request.auth,
                                                   receipt_id=parse_uuid(id, "id", code="invalid_id"),
                                                   body=request.data)
        return Response(payload, status=201 if created else 200)


class EvaluateQuerySerializer(RetrieveRequestSerializer):
    """One graded query: with the retrieve target, a ``POST /retrieve`` body but raw, topN and
    tokenBudget (evaluation sets them); with a view target, ``EVALUATE_VIEW_QUERY_KEYS`` only."""

    raw = topN = tokenBudget = None
    id = SchemaField(string_schema(max_length=evaluate_request.ID_CHARS), required=False)
    relevant = SchemaField({
        "type": "object", "minProperties": 1, "maxProperties": evaluate_request.MAX_RELEVANT,
        "propertyNames": {"format": "uuid"},
        "additionalProperties": int_schema(minimum=0, maximum=evaluate_request.MAX_GRADE),
        "not": {"additionalProperties": {"maximum": 0}}}, help_text="{record id: grade 0-100}; at least one "
        "grade >= 1.")
    parameters = SchemaField({"type": "object"}, required=False, help_text="View target only: view parameters.")


EVALUATE_VIEW_QUERY_KEYS = ["id", "query", "relevant", "parameters", "entity"]


@closed_request
class EvaluateRequestSerializer(serializers.Serializer):
    cross_member_rules = [{
        "if": {"required": ["target"], "properties": {"target": {"type": "object"}}},
        "then": {"properties": {"queries": {"items": {
            "propertyNames": {"enum": EVALUATE_VIEW_QUERY_KEYS},
            "not": {"required": ["entity", "parameters"], "properties": {"parameters": {"required": ["entity"]}}}}}}},
        "else": {"properties": {"queries": {"items": {"not": {"required": ["parameters"]}}}}},
        "description": "parameters (and nothing of /retrieve but entity) with a view target only"}]
    queries = EvaluateQuerySerializer(many=True, min_length=1, max_length=evaluate_request.MAX_QUERIES,
                                      help_text="1 to 100 queries. With the retrieve target each "
                                      "may carry POST /retrieve fields (entity, collections, mode, ...) except raw, "
                                      "topN and tokenBudget.")
    k = SchemaField(int_schema(minimum=1, maximum=evaluate_request.MAX_K, default=evaluate_request.DEFAULT_K),
                    required=False)
    target = SchemaField({"anyOf": [
        {"const": "retrieve"},
        {"type": "object", "additionalProperties": False, "required": ["view"], "properties": {
            "view": string_schema(pattern=PUBLIC_NAME),
            "parameters": {"type": "object", "not": {"required": [evaluate_request.DEFAULT_QUERY_PARAMETER]}},
            "queryParameter": string_schema()}}]}, required=False,
        help_text='"retrieve" (default) or {view, parameters?, queryParameter?: "task"}; queryParameter is '
                  'filled by each query\'s text, so parameters may not name it.')


_Evaluation = inline_serializer("Evaluation", {
    "target": serializers.JSONField(), "k": serializers.IntegerField(),
    "measures": serializers.JSONField(help_text="ir-measures names: {recall: R@k, ndcg: nDCG@k, rr: RR@k}"),
    "overall": serializers.JSONField(help_text="{queries, recall, ndcg, mrr}: means over every query"),
    "queries": serializers.JSONField(help_text="[{index, id, query, metrics: {recall, ndcg, rr}, ranking, "
                                     "relevantRetrieved, relevantTotal, unknownRelevant}]")})


class EvaluateView(APIView):
    capability = "read"
    database = "read"

    @extend_schema(
        summary="Measure retrieval quality: recall@k, nDCG@k and MRR over graded queries (no side effects)",
        request=EvaluateRequestSerializer,
        responses={200: _Evaluation, 400: ErrorSerializer, 401: ErrorSerializer, 404: ErrorSerializer,
                   409: ErrorSerializer, 422: ErrorSerializer, 503: ErrorSerializer},
        examples=[OpenApiExample("Two graded queries", request_only=True, value={
            "k": 10, "queries": [
                {"id": "q3-budget", "query": "What is the Q3 budget?", "entity": "contact.maria",
                 "relevant": {"0b6f3a52-7a6e-4f0e-9d43-2f7f1c3c9a10": 2}},
                {"query": "renewal risk", "relevant": {"5d1c1a8e-2f4b-4a3e-8d2a-9e0f3b7c6d51": 1}}]})])
    def post(self, request):
        return Response(evaluation_run(workspace=request.auth, body=request.data))
