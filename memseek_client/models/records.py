"""The write side: ``POST /records`` (``RecordInput`` in, ``IngestResult`` out), ``GET
/records/{id}`` (``Record``) and draft review (``ReviewResult``)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any



@dataclass(frozen=True, slots=True, kw_only=True)
class RecordInput:
    """One record to write; ``None`` members are left out of the request (the server's defaults
    apply). ``occurred_at`` may be an aware ``datetime`` or an ISO 8601 string."""

    entity: str
    type: str
    collection: str | None = None
    collection_version: int | None = None
    key: str | None = None
    text: str | None = None
    content: Mapping[str, Any] | None = None
    status: str | None = None
    dedupe_key: str | None = None
    derived_from: Sequence[str] | None = None
    tombstone: bool | None = None
    occurred_at: datetime | str | None = None
    scores: Mapping[str, float] | None = None
    annotations: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestOutcome:
    index: int
    id: str
    ready: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestResult:
    inserted: tuple[IngestOutcome, ...]
    duplicates: tuple[IngestOutcome, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Record:
    id: str
    seq: int
    collection: str
    collection_version: int
    collection_hash: str
    entity: str
    key: str | None
    type: str
    status: str
    content: Any
    tombstone: bool
    embedding_space: str | None
    scores: Mapping[str, float]
    annotations: Any
    annotation_meta: Any
    enrichment_meta: Any
    enrichment_error: Any
    ready: bool
    enriched_at: str | None
    run_id: str | None
    depth: int
    derived_from: tuple[str, ...]
    dedupe_key: str | None
    occurred_at: str
    created_at: str
    last_accessed: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ReviewRecord:
    id: str
    seq: int
    entity: str
    collection: str
    collection_version: int
    key: str
    type: str
    status: str
    text: str
    content: Any
    scores: Mapping[str, float]
    annotations: Any
    tombstone: bool
    ready: bool
    depth: int
    derived_from: tuple[str, ...]
    occurred_at: str
    created_at: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ReviewResult:
    record: ReviewRecord
    draft_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ErasureResult:
    """``DELETE /records/{id}`` and ``POST /erase``: ``counts`` are the rows of each kind the
    erasure removed (or, with ``dry_run``, would remove); ``audit_id`` is None for a dry run."""

    dry_run: bool
    counts: dict[str, int]
    audit_id: int | None
