"""Reads: ``/health``, ``/timeline``, ``/document``, ``/document/history``, ``/collections``."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicaHealth:
    """One read replica as the server's read router sees it (``state``: ok, down, lagging,
    not_streaming or not_standby)."""

    name: str
    state: str
    replay_lsn: str | None
    lag_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class HealthProblem:
    """One figure of ``/health`` past its threshold: its dotted ``check`` path, its value, the
    limit it passed and why that matters."""

    check: str
    value: Any
    limit: Any
    why: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Health:
    ok: bool
    db: bool
    status: str | None = None  # ok or degraded; absent when the database does not answer
    degraded: tuple[HealthProblem, ...] | None = None
    queues: Any = None  # broker, and per queue its depth and oldest age (a JSON object)
    backlog: Any = None  # pending records and lexical pending rows (a JSON object)
    replicas: tuple[ReplicaHealth, ...] | None = None  # only when the server has read replicas


@dataclass(frozen=True, slots=True, kw_only=True)
class TimelineRow:
    id: str
    seq: int
    collection: str
    key: str | None
    type: str
    status: str
    ready: bool
    tombstone: bool
    run_id: str | None
    text: str
    occurred_at: str
    created_at: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TimelinePage:
    records: tuple[TimelineRow, ...]
    next_before_seq: int | None
    truncated: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class DocumentBelief:
    collection: str
    collection_version: int
    collection_hash: str
    key: str
    type: str
    text: str
    id: str
    run_id: str | None
    citations: tuple[str, ...]
    status: str
    depth: int
    ready: bool
    enrichment_error: Any
    occurred_at: str
    created_at: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DocumentRetraction:
    collection: str
    key: str
    id: str
    seq: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Document:
    entity: str
    status: str
    beliefs: tuple[DocumentBelief, ...]
    retractions: tuple[DocumentRetraction, ...]
    freshness: tuple[Any, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DocumentVersion:
    id: str
    seq: int
    collection: str
    collection_version: int
    collection_hash: str
    key: str
    type: str
    status: str
    text: str
    tombstone: bool
    ready: bool
    enrichment_error: Any
    run_id: str | None
    citations: tuple[str, ...]
    depth: int
    occurred_at: str
    created_at: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DocumentHistory:
    versions: tuple[DocumentVersion, ...]
    next_before_seq: int | None
    truncated: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class CollectionField:
    path: str
    type: Any
    filter: bool
    sort: bool
    project: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class CollectionContract:
    name: str
    version: int
    hash: str
    contract_hash: str
    active: bool
    mode: str
    schema: Any
    text_projection: str | None
    fields: Mapping[str, CollectionField]
    required_processors: tuple[str, ...]
    optional_processors: tuple[str, ...]
    search_profile: str
    declared_search_profile: str
    allowed_search_profiles: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CollectionList:
    collections: tuple[CollectionContract, ...]
