"""Search and views: ``/search``, ``/views``, ``/views/{name}/query``, ``/rank/schema``."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any



@dataclass(frozen=True, slots=True, kw_only=True)
class SearchHit:
    """A hit; members other than ``id``, ``rank`` and ``score`` are present only when the
    search's ``include`` / ``fields`` / ``annotations`` asked for them."""

    id: str
    rank: int
    score: float | None
    rank_score: float | None = None
    source_ranks: Mapping[str, int] | None = None
    text: str | None = None
    scores: Mapping[str, float] | None = None
    collection: str | None = None
    collection_version: int | None = None
    entity: str | None = None
    type: str | None = None
    key: str | None = None
    status: str | None = None
    depth: int | None = None
    occurred_at: str | None = None
    created_at: str | None = None
    run_id: str | None = None
    fields: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchResponse:
    hits: tuple[SearchHit, ...]
    ranking: Any
    rendered: str | None
    truncated: bool
    backend: Any
    profiles: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ViewList:
    views: tuple[Any, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ViewQueryResult:
    view: Any
    parameters: Any
    hits: Any
    input_record_ids: tuple[str, ...]
    truncated: bool
    profiles: tuple[str, ...]
    backend: Any
    ranking: Any = None
    rendered: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RankSchema:
    rank: Any
    result_scores: Any
    search_spec: Any
    rank_hash: str
    default_candidates: int
    variants: Any
    profiles: Any
    bindings: Any
    backends: Any
    # The ranking catalog (``bm25_v1``: k1, b, formulas, scan ceilings, retrieval slots) of a
    # server with lexical search; older servers do not send it.
    ranking: Any = field(default=None, metadata={"newer": True})
    # "catalog" when the workspace's catalog loaded conf/rank_default.yaml, "builtin" when the
    # engine's built-in formula ranks; then default_warning says so. None from older servers.
    default_source: str | None = field(default=None, metadata={"newer": True})
    default_warning: str | None = field(default=None, metadata={"newer": True})
