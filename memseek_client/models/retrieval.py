"""Context retrieval: ``/context``, ``/retrieve``, ``/receipts/{id}`` and its feedback,
``/evaluate``. Members are named in Python style; ``metadata["json"]`` keeps the API's
camelCase spelling."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..decode import json_field



@dataclass(frozen=True, slots=True, kw_only=True)
class ContextSection:
    ids: tuple[str, ...]
    tokens: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextComponents:
    document: ContextSection
    search: ContextSection
    recent: ContextSection


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextResponse:
    entity: str
    task: str
    budget: int
    components: ContextComponents
    input_record_ids: tuple[str, ...]
    rendered: str
    tokens: int
    truncated: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class RetrievedEntry:
    id: str
    text: str
    rendered: str
    entity: str
    collection: str
    type: str
    key: str | None
    score: float | None
    tokens: int
    provenance: Any
    valid_from: str = json_field("validFrom")
    valid_to: str | None = json_field("validTo")
    recorded_at: str = json_field("recordedAt")
    recorded_until: str | None = json_field("recordedUntil")
    superseded_at: str | None = json_field("supersededAt", default=None)
    superseded_by: str | None = json_field("supersededBy", default=None)
    policy: Any
    version: Any
    trust: Any
    explanation: Any = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryContextSections:
    policies: tuple[RetrievedEntry, ...]
    facts: tuple[RetrievedEntry, ...]
    events: tuple[RetrievedEntry, ...]
    derived: tuple[RetrievedEntry, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryContext:
    receipt_id: str = json_field("receiptId")
    mode: str
    as_of: str | None = json_field("asOf")
    as_of_axis: str = json_field("asOfAxis")
    sections: MemoryContextSections
    compilation: Any
    diagnostics: Any = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Receipt:
    id: str
    created_at: str = json_field("createdAt")
    request_hash: str = json_field("requestHash")
    mode: str
    raw: bool
    token_budget: int | None = json_field("tokenBudget")
    total_tokens: int = json_field("totalTokens")
    sections: Any
    items: Any


@dataclass(frozen=True, slots=True, kw_only=True)
class Feedback:
    id: str
    receipt_id: str = json_field("receiptId")
    outcome: str
    score: float
    record_ids: tuple[str, ...] = json_field("recordIds")
    comment: str
    dedupe_key: str | None = json_field("dedupeKey")
    created_at: str = json_field("createdAt")
    deduplicated: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Evaluation:
    """``measures``, ``overall`` and ``queries`` as the OpenAPI document describes them."""

    target: Any
    k: int
    measures: Any
    overall: Any
    queries: Any
