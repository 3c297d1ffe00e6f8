"""The one error envelope and the list of stable error codes.

Every error response is ``{"error": code, "detail": text}`` plus ``"path"`` (the dotted
location of the offending value) when there is one. App code raises ``ApiError(code, ...)``;
the HTTP status comes from ``ERROR_STATUS`` so a code always maps to the same status.
"""
from __future__ import annotations

import logging

from django.http import Http404
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response

logger = logging.getLogger(__name__)

ERROR_STATUS: dict[str, int] = {
    # Request shape
    "invalid_json": 422,
    "request_schema": 422,
    "invalid_id": 422,
    "unknown_parameter": 422,
    "view_parameter": 422,
    "method_not_allowed": 405,
    "unsupported_media_type": 415,
    "bad_request": 400,
    # The JSON body and query text rules (memseek_site.json_body)
    "body_too_large": 413,
    "json_too_deep": 422,
    "duplicate_key": 422,
    "invalid_character": 422,
    "number_out_of_range": 422,
    "datetime_out_of_range": 422,
    # Auth
    "unauthorized": 401,
    # Write side (reference 3.3)
    "batch_too_large": 422,
    "entity": 422,
    "reserved_collection": 422,
    "reserved_type": 422,
    "reserved_content": 422,
    "unknown_collection": 422,
    "unknown_collection_version": 422,
    "record_mode": 422,
    "text_required": 422,
    "text_mismatch": 422,
    "text_too_large": 422,
    "content_schema": 422,
    "content_too_large": 422,
    "field_type": 422,
    "tombstone": 422,
    "duplicate_parent": 422,
    "too_many_parents": 422,
    "parent_not_found": 422,
    "parent_workspace": 422,
    "parent_cycle": 422,
    "parent_order": 422,
    "depth_limit": 422,
    "client_output": 422,
    "required_client_output": 422,
    "annotation_too_large": 422,
    "dedupe_conflict": 409,
    # Reads
    "record_not_found": 404,
    "document_too_large": 409,
    "response_too_large": 409,
    "no_catalog": 409,
    # Draft review (POST /records/{id}/approve, /reject; reference 2.2 and 3.3 POST /promote)
    "not_a_draft": 409,
    "draft_not_keyed": 409,
    "promotion_stale": 409,
    "nothing_to_retract": 409,
    # Search (views-and-search.md, reference A.1)
    "query_too_long": 422,
    "search_spec": 422,
    "search_scope": 422,
    "search_profile": 422,
    "capability": 422,
    "reserved": 422,
    "field_order": 422,
    "field_reference": 422,
    "field_compatibility": 422,
    "field_permission": 422,
    "field_operator": 422,
    "field_operand": 422,
    "unknown_annotation": 422,
    "required_annotation": 422,
    "rank_evaluation": 422,
    "rerank_model": 422,
    "graph_unavailable": 422,
    "graph_ambiguous": 422,
    "graph_depth": 422,
    "graph_limit": 422,
    "view_not_found": 404,
    "search_backend_unavailable": 503,
    "rerank_budget": 503,
    "rerank_timeout": 503,
    "rerank_unavailable": 503,
    "rerank_invalid": 503,
    # Context retrieval (context-retrieval.md): POST /retrieve, GET /receipts/{id}
    "mode_conflict": 400,
    "CONTEXT_BUDGET_TOO_SMALL": 422,  # spelled exactly as the spec names it
    "receipt_not_found": 404,
    "workspace_setting": 409,
    # POST /receipts/{id}/feedback (dedupe_conflict above), POST /evaluate (view_not_found above)
    "record_not_in_receipt": 422,
    # Dependencies
    "database_unavailable": 503,
    "embedding_unavailable": 503,
    # Anything else
    "not_found": 404,
    "internal_error": 500,
}


class ApiError(Exception):
    """An error with a stable code, a human detail and an optional dotted path.

    ``extra`` members are merged into the envelope (e.g. ``requiredTokens``).
    """

    def __init__(self, code: str, detail: str, *, path: str | None = None, **extra):
        if code not in ERROR_STATUS:
            raise KeyError(f"unregistered error code {code!r}")
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.path = path
        self.extra = extra

    @property
    def status(self) -> int:
        return ERROR_STATUS[self.code]

    def prefixed(self, prefix: str, path_prefix: str) -> "ApiError":
        """Return a copy located inside a batch item: detail ``prefix: ...``, path under it."""
        path = f"{path_prefix}.{self.path}" if self.path else path_prefix
        return ApiError(self.code, f"{prefix}: {self.detail}", path=path, **self.extra)

    def envelope(self) -> dict:
        body = {"error": self.code, "detail": self.detail}
        if self.path is not None:
            body["path"] = self.path
        body.update(self.extra)
        return body


def error_response(error: ApiError) -> Response:
    return Response(error.envelope(), status=error.status)


def api_exception_handler(exc, context):
    """DRF exception handler: renders every failure in the one envelope."""
    if isinstance(exc, ApiError):
        return error_response(exc)
    if isinstance(exc, drf_exceptions.ParseError):
        return error_response(ApiError("invalid_json", f"The body is not valid JSON: {exc.detail}"))
    if isinstance(exc, (drf_exceptions.NotAuthenticated, drf_exceptions.AuthenticationFailed)):
        return error_response(ApiError("unauthorized", str(exc.detail)))
    if isinstance(exc, drf_exceptions.MethodNotAllowed):
        return error_response(ApiError("method_not_allowed", str(exc.detail)))
    if isinstance(exc, drf_exceptions.UnsupportedMediaType):
        return error_response(ApiError("unsupported_media_type", str(exc.detail)))
    if isinstance(exc, (Http404, drf_exceptions.NotFound)):
        return error_response(ApiError("not_found", "No such route or object."))
    if isinstance(exc, drf_exceptions.APIException):
        return error_response(ApiError("request_schema", str(exc.detail)))
    logger.exception("unexpected error in %s", context.get("view").__class__.__name__)
    return error_response(ApiError("internal_error", "An unexpected error occurred."))
