"""Record reads: ``GET /records/{id}``, ``/timeline``, ``/document``, ``/document/history``.

Each view parses its query string once into a frozen dataclass (unknown or repeated parameters
are ``422 request_schema``), calls one selector and returns its payload.
"""
from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from memseek_site.parsing import PUBLIC_NAME, fail, int_schema, parse_query, parse_string, parse_uuid, query_int, \
    query_list, query_list_schema, string_schema

from .. import selectors
from ..record_limits import ENTITY_CHARS, KEY_CHARS
from .schema import ErrorSerializer

PAGE_LIMIT = 100
_TIMELINE_COLLECTION = re.compile(rf"^({re.escape(selectors.SYSTEM_COLLECTION)}|[a-z][a-z0-9._-]{{0,63}})$")


# --- Query parsing ---------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class TimelineQuery:
    entity: str
    collections: tuple[str, ...] | None
    types: tuple[str, ...] | None
    status: str
    limit: int
    before_seq: int | None
    include_system: bool


@dataclass(frozen=True, slots=True)
class DocumentQuery:
    entity: str
    collections: tuple[str, ...] | None
    status: str


@dataclass(frozen=True, slots=True)
class HistoryQuery:
    entity: str
    collection: str
    key: str
    limit: int
    before_seq: int | None


def parse_record_id(raw: str) -> uuid.UUID:
    """The ``{id}`` path segment; a malformed one is ``422 invalid_id`` at path ``id``."""
    return parse_uuid(raw, "id", code="invalid_id")


def parse_no_query(params) -> None:
    if params:
        raise fail(next(iter(params)), "unknown query parameter; this route takes none")


def parse_timeline_query(params) -> TimelineQuery:
    raw = parse_query(params, allowed=("entity", "collections", "types", "status", "limit", "before_seq",
                                       "include_system"), required=("entity",))
    include_system = _query_bool(raw.get("include_system", "false"), "include_system")
    collections = _optional_list(raw, "collections", _TIMELINE_COLLECTION)
    if collections and selectors.SYSTEM_COLLECTION in collections and not include_system:
        raise fail("collections", f"{selectors.SYSTEM_COLLECTION} is hidden; add include_system=true to read it")
    return TimelineQuery(
        entity=_entity(raw),
        collections=collections,
        types=_optional_list(raw, "types", PUBLIC_NAME),
        status=_choice(raw.get("status", "active"), "status", ("active", "draft", "all")),
        limit=_limit(raw),
        before_seq=_before_seq(raw),
        include_system=include_system,
    )


def parse_document_query(params) -> DocumentQuery:
    raw = parse_query(params, allowed=("entity", "collections", "status"), required=("entity",))
    return DocumentQuery(
        entity=_entity(raw),
        collections=_optional_list(raw, "collections", PUBLIC_NAME),
        status=_choice(raw.get("status", "active"), "status", ("active", "draft")),
    )


def parse_history_query(params) -> HistoryQuery:
    raw = parse_query(params, allowed=("entity", "collection", "key", "limit", "before_seq"),
                      required=("entity", "collection", "key"))
    return HistoryQuery(
        entity=_entity(raw),
        collection=parse_string(raw["collection"], "collection", pattern=PUBLIC_NAME),
        key=parse_string(raw["key"], "key", max_length=KEY_CHARS),
        limit=_limit(raw),
        before_seq=_before_seq(raw),
    )


def _entity(raw: dict[str, str]) -> str:
    return parse_string(raw["entity"], "entity", max_length=ENTITY_CHARS)


def _limit(raw: dict[str, str]) -> int:
    return query_int(raw["limit"], "limit", minimum=1, maximum=PAGE_LIMIT) if "limit" in raw else PAGE_LIMIT


def _before_seq(raw: dict[str, str]) -> int | None:
    return query_int(raw["before_seq"], "before_seq", minimum=1) if "before_seq" in raw else None


def _optional_list(raw: dict[str, str], name: str, pattern: re.Pattern) -> tuple[str, ...] | None:
    return query_list(raw[name], name, pattern=pattern) if name in raw else None


def _choice(value: str, path: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise fail(path, f"must be one of {', '.join(choices)}, got {value!r}")
    return value


def _query_bool(value: str, path: str) -> bool:
    if value not in ("true", "false"):
        raise fail(path, f"must be true or false, got {value!r}")
    return value == "true"


# --- OpenAPI shapes (serializers describe the schema; selectors build the payloads) -----------

class RecordDereferenceSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    seq = serializers.IntegerField(help_text="The workspace's own ingestion ordinal (1, 2, 3, ... in this workspace).")
    collection = serializers.CharField()
    collection_version = serializers.IntegerField()
    collection_hash = serializers.CharField()
    entity = serializers.CharField()
    key = serializers.CharField(allow_null=True)
    type = serializers.CharField()
    status = serializers.ChoiceField(choices=["active", "draft"])
    content = serializers.JSONField()
    tombstone = serializers.BooleanField()
    embedding_space = serializers.CharField(allow_null=True)
    scores = serializers.DictField(child=serializers.FloatField())
    annotations = serializers.JSONField()
    annotation_meta = serializers.JSONField()
    enrichment_meta = serializers.JSONField(help_text="Per processor the worker ran: status, completed_at and "
                                                      "the model or embedding space; {} when it ran none.")
    enrichment_error = serializers.JSONField(allow_null=True)
    ready = serializers.BooleanField()
    enriched_at = serializers.DateTimeField(allow_null=True)
    run_id = serializers.UUIDField(allow_null=True)
    depth = serializers.IntegerField()
    derived_from = serializers.ListField(child=serializers.UUIDField())
    dedupe_key = serializers.CharField(allow_null=True)
    occurred_at = serializers.DateTimeField()
    created_at = serializers.DateTimeField()
    last_accessed = serializers.DateTimeField()


class TimelineRowSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    seq = serializers.IntegerField(help_text="The workspace's own ingestion ordinal (1, 2, 3, ... in this workspace).")
    collection = serializers.CharField()
    key = serializers.CharField(allow_null=True)
    type = serializers.CharField()
    status = serializers.ChoiceField(choices=["active", "draft"])
    ready = serializers.BooleanField()
    tombstone = serializers.BooleanField()
    run_id = serializers.UUIDField(allow_null=True)
    text = serializers.CharField(help_text="Middle-truncated to 500 characters.")
    occurred_at = serializers.DateTimeField()
    created_at = serializers.DateTimeField()


class TimelinePageSerializer(serializers.Serializer):
    records = TimelineRowSerializer(many=True)
    next_before_seq = serializers.IntegerField(allow_null=True)
    truncated = serializers.BooleanField()


class DocumentBeliefSerializer(serializers.Serializer):
    collection = serializers.CharField()
    collection_version = serializers.IntegerField()
    collection_hash = serializers.CharField()
    key = serializers.CharField()
    type = serializers.CharField()
    text = serializers.CharField()
    id = serializers.UUIDField()
    run_id = serializers.UUIDField(allow_null=True)
    citations = serializers.ListField(child=serializers.UUIDField())
    status = serializers.ChoiceField(choices=["active", "draft"])
    depth = serializers.IntegerField()
    ready = serializers.BooleanField()
    enrichment_error = serializers.JSONField(allow_null=True)
    occurred_at = serializers.DateTimeField()
    created_at = serializers.DateTimeField()


class DocumentRetractionSerializer(serializers.Serializer):
    collection = serializers.CharField()
    key = serializers.CharField()
    id = serializers.UUIDField()
    seq = serializers.IntegerField(help_text="The workspace's own ingestion ordinal (1, 2, 3, ... in this workspace).")


class DocumentSerializer(serializers.Serializer):
    entity = serializers.CharField()
    status = serializers.ChoiceField(choices=["active", "draft"])
    beliefs = DocumentBeliefSerializer(many=True)
    retractions = DocumentRetractionSerializer(many=True)
    freshness = serializers.ListField(child=serializers.JSONField(),
                                      help_text="Read-triggered derivations feeding the entity; this service runs "
                                                "none, so the list is empty.")


class DocumentVersionSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    seq = serializers.IntegerField(help_text="The workspace's own ingestion ordinal (1, 2, 3, ... in this workspace).")
    collection = serializers.CharField()
    collection_version = serializers.IntegerField()
    collection_hash = serializers.CharField()
    key = serializers.CharField()
    type = serializers.CharField()
    status = serializers.ChoiceField(choices=["active", "draft"])
    text = serializers.CharField()
    tombstone = serializers.BooleanField()
    ready = serializers.BooleanField()
    enrichment_error = serializers.JSONField(allow_null=True)
    run_id = serializers.UUIDField(allow_null=True)
    citations = serializers.ListField(child=serializers.UUIDField())
    depth = serializers.IntegerField()
    occurred_at = serializers.DateTimeField()
    created_at = serializers.DateTimeField()


class DocumentHistorySerializer(serializers.Serializer):
    versions = DocumentVersionSerializer(many=True)
    next_before_seq = serializers.IntegerField(allow_null=True)
    truncated = serializers.BooleanField()


def _param(name: str, description: str, *, required: bool = False, type_=OpenApiTypes.STR, **kwargs):
    return OpenApiParameter(name, type_, OpenApiParameter.QUERY, required=required, description=description,
                            **kwargs)


_ENTITY = _param("entity", f"Whose memory (at most {ENTITY_CHARS} characters).", required=True,
                 type_=string_schema(max_length=ENTITY_CHARS))
_LIMIT = _param("limit", "Page size, 1..100 (default 100).", type_=int_schema(minimum=1, maximum=PAGE_LIMIT))
_BEFORE_SEQ = _param("before_seq", "Only rows with a lower seq (the previous page's next_before_seq).",
                     type_=int_schema(minimum=1))
_NAMES = query_list_schema(PUBLIC_NAME)
_ERRORS = {401: ErrorSerializer, 422: ErrorSerializer}


# --- Views -----------------------------------------------------------------------------------

class RecordDetailView(APIView):
    capability = "read"
    database = "read"

    @extend_schema(
        operation_id="record_get", summary="Dereference one record",
        description="Every stored field except the raw vector. Touches last_accessed when TOUCH_ON_READ is on.",
        parameters=[OpenApiParameter("id", OpenApiTypes.UUID, OpenApiParameter.PATH,
                                     description="Record id; a malformed one is 422 invalid_id.")],
        responses={200: RecordDereferenceSerializer, 404: ErrorSerializer, **_ERRORS})
    def get(self, request, id: str):  # the spec names the segment {id}
        parse_no_query(request.query_params)
        return Response(selectors.record_get(workspace=request.auth, record_id=parse_record_id(id)))


class TimelineView(APIView):
    capability = "read"
    database = "read"

    @extend_schema(
        operation_id="timeline_list", summary="An entity's records, newest first",
        parameters=[
            _ENTITY,
            _param("collections", "Comma-separated collection names (_system needs include_system=true).",
                   type_=_NAMES),
            _param("types", "Comma-separated record types.", type_=_NAMES),
            _param("status", "Lane to read (default active).", enum=["active", "draft", "all"]),
            _LIMIT, _BEFORE_SEQ,
            _param("include_system", "Include the _system collection (default false).", type_=OpenApiTypes.BOOL),
        ],
        responses={200: TimelinePageSerializer, 409: ErrorSerializer, **_ERRORS})
    def get(self, request):
        query = parse_timeline_query(request.query_params)
        return Response(selectors.timeline_list(
            workspace=request.auth, entity=query.entity, collections=query.collections, types=query.types,
            status=query.status, limit=query.limit, before_seq=query.before_seq,
            include_system=query.include_system))


class DocumentView(APIView):
    capability = "read"
    database = "read"

    @extend_schema(
        operation_id="document_get", summary="Current keyed state of an entity",
        description="The newest row of each (collection, key) in one lane, ready or not; current tombstones "
                    "are listed under retractions. Never partial: too many rows or bytes is 409.",
        parameters=[
            _ENTITY,
            _param("collections", "Comma-separated collection names.", type_=_NAMES),
            _param("status", "Lane to read (default active).", enum=["active", "draft"]),
        ],
        responses={200: DocumentSerializer, 409: ErrorSerializer, **_ERRORS})
    def get(self, request):
        query = parse_document_query(request.query_params)
        return Response(selectors.document_get(workspace=request.auth, entity=query.entity,
                                               collections=query.collections, status=query.status))


class DocumentHistoryView(APIView):
    capability = "read"
    database = "read"

    @extend_schema(
        operation_id="document_history_list", summary="Every version of one keyed slot, newest first",
        parameters=[
            _ENTITY,
            _param("collection", "Collection name.", required=True, type_=string_schema(pattern=PUBLIC_NAME)),
            _param("key", "Slot key (at most 128 characters).", required=True,
                   type_=string_schema(max_length=KEY_CHARS)),
            _LIMIT, _BEFORE_SEQ,
        ],
        responses={200: DocumentHistorySerializer, 409: ErrorSerializer, **_ERRORS})
    def get(self, request):
        query = parse_history_query(request.query_params)
        return Response(selectors.document_history_list(
            workspace=request.auth, entity=query.entity, collection=query.collection, key=query.key,
            limit=query.limit, before_seq=query.before_seq))
