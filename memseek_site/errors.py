"""The one error base class and the list of stable error codes with their HTTP status.

Every domain error (a bad SearchSpec, a catalog problem, a failing model provider, ...) is an
``ApiError`` subclass built as ``(code, message, path, extra)`` in that order, so a caller never
catches one error to raise another of a different type. The HTTP status comes from
``ERROR_STATUS`` so a code always maps to the same status. This module imports neither DRF nor
the database: raising an error is possible in pure code; ``error_handler`` renders it.

Every error response is ``{"error": code, "detail": text}`` plus ``"path"`` (the dotted
location of the offending value) when there is one, plus the ``extra`` members.
"""
from __future__ import annotations

from collections.abc import Collection, Mapping

ERROR_STATUS: dict[str, int] = {
    # Request shape
    "invalid_json": 422,
    "request_schema": 422,
    "invalid_id": 422,
    "unknown_parameter": 422,
    "view_parameter": 422,
    "method_not_allowed": 405,
    "not_acceptable": 406,
    "uri_too_long": 414,
    "unsupported_media_type": 415,
    "bad_request": 400,
    "invalid_encoding": 400,
    # The JSON body and query text rules (memseek_site.json_body)
    "body_too_large": 413,
    "json_too_deep": 422,
    "duplicate_key": 422,
    "invalid_character": 422,
    "number_out_of_range": 422,
    "datetime_out_of_range": 422,
    # Auth
    "unauthorized": 401,
    "capability_missing": 403,
    # Rate limits and storage quotas (catalog_app.throttle, catalog_app.services.storage_quota)
    "rate_limited": 429,
    "quota_exceeded": 413,
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
    "query_terms": 422,
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
    # POST /memory/search (memory-brief-and-lookups.md)
    "memory_filter_budget": 503,
    "memory_filter_timeout": 503,
    "memory_filter_unavailable": 503,
    "memory_filter_invalid": 503,
    # POST /receipts/{id}/feedback (dedupe_conflict above), POST /evaluate (view_not_found above)
    "record_not_in_receipt": 422,
    # Memory addresses and lookups (memory-brief-and-lookups.md): /memory/*
    "invalid_path": 422,
    "date_order": 422,
    "path_not_found": 404,
    # MCP (POST /mcp, GET /tools): transport refusals and tool results
    "origin_not_allowed": 403,
    "tool_binding_inactive": 409,
    # Lexical search (lexical-search.md): POST /search/lexical answers 400 for every request problem
    "lexical_request": 400,
    "lexical_query_terms": 400,
    "lexical_scan_budget": 400,
    "retrieval_scan_limit": 400,
    "retrieval_busy": 503,
    "erasure_busy": 503,
    "retrieval_inconsistency": 500,
    # Read-your-writes: a Memseek-Consistency-Token header that is not a WAL position
    "invalid_consistency_token": 400,
    # Export and import (GET /export, POST /import): a line's problem names lines[i] and its line
    "invalid_cursor": 422,
    "import_format": 422,
    "import_incomplete": 422,
    "import_definition": 422,
    "import_vector": 422,
    "import_conflict": 409,
    "import_id_taken": 409,
    "import_seq_taken": 409,
    # Dependencies
    "database_unavailable": 503,
    # No primary (a failover's gap) and the standby has not replayed the read's write (memseek_site.replicas)
    "standby_behind": 503,
    # The request's deadline passed (memseek_site.deadline)
    "deadline_exceeded": 503,
    "embedding_unavailable": 503,
    # The lexical index disagreeing with itself (catalog_app.lexical): fail, never drop a candidate
    "lexical_index_inconsistent": 500,
    # Anything else
    "not_found": 404,
    "internal_error": 500,
}


class ApiError(Exception):
    """An error with a stable code, a message, an optional dotted path and extra envelope members.

    ``codes`` is where a subclass's codes are registered (``None``: the subclass names its own,
    such as catalog issue codes, which are not HTTP answers). ``path_in_detail`` says whether the
    rendered ``detail`` starts with the path (``scope.k: must be ...``), as parser errors do.
    Subclasses keep this constructor's arguments, so every error is built the same way.
    """

    codes: Collection[str] | None = ERROR_STATUS
    default_code = "request_schema"  # what the strict readers raise when the caller names no code
    root_path: str | None = None  # the path the strict readers give the document itself
    path_in_detail = False

    def __init__(self, code: str, message: str, path: str | None = None, extra: Mapping | None = None):
        if self.codes is not None and code not in self.codes:
            raise KeyError(f"unregistered error code {code!r}")
        self.code = code
        self.message = message
        self.path = path
        self.extra = dict(extra or {})
        super().__init__(self.detail)

    @property
    def detail(self) -> str:
        if self.path_in_detail and self.path:
            return f"{self.path}: {self.message}"
        return self.message

    @property
    def status(self) -> int:
        return ERROR_STATUS.get(self.code, 500)

    def prefixed(self, prefix: str, path_prefix: str | None = None, *, code: str | None = None) -> ApiError:
        """This error as the caller that embedded the value reports it: detail ``prefix: ...``,
        the path under ``path_prefix`` when given, ``code`` when the caller's contract names one."""
        path = self.path
        if path_prefix is not None:
            path = f"{path_prefix}.{self.path}" if self.path else path_prefix
        return ApiError(code or self.code, f"{prefix}: {self.detail}", path, self.extra)

    def relocated(self, path: str | None, *, code: str | None = None) -> ApiError:
        """The same error, with the same message, at ``path`` of the document that embedded the
        parsed value, under ``code`` when the embedding document's contract names one."""
        return type(self)(code or self.code, self.message, path, self.extra)

    def envelope(self) -> dict:
        body = {"error": self.code, "detail": self.detail}
        if self.path:
            body["path"] = self.path
        body.update(self.extra)
        return body

    def __str__(self) -> str:
        return self.detail

    def __reduce__(self):
        # Exception pickling replays ``args``; a subclass's own attributes (a provider's status,
        # an activation's issues) would be lost, so the whole state travels instead.
        return _rebuilt, (type(self), self.__dict__)


def _rebuilt(cls: type[ApiError], state: dict) -> ApiError:
    error = cls.__new__(cls)
    error.__dict__.update(state)
    return error


class SettingError(ApiError):
    """A stored workspace setting that fails its check: ``409 workspace_setting`` naming the
    setting.

    The setting's dotted name is not a location in the request, so the envelope carries it as
    ``setting``, not ``path``, and the detail names it.
    """

    default_code = "workspace_setting"

    def __init__(self, code: str, message: str, path: str | None = None, extra=None):
        super().__init__(code, f"workspace setting {path}: {message}", None, {"setting": path, **(extra or {})})


class RequestError(ApiError):
    """A request value that failed a strict reader (``memseek_site.parsing``)."""

    path_in_detail = True
