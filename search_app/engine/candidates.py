"""What a candidate backend and the search pipeline exchange: the query's context, the
canonical row a backend reloads, and how channels' proposals are merged. Pure data and
arithmetic; the backends (``search_app.backends``) hold the SQL."""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class QueryContext:
    workspace_id: int
    q: str | None
    vector: list[float] | None
    space: str
    dimensions: int


@dataclass(frozen=True, slots=True)
class CanonicalRow:
    id: uuid.UUID
    seq: int
    collection: str
    collection_version: int
    entity: str
    type: str
    key: str | None
    status: str
    text: str | None  # None until ``with_bodies`` when reloaded without bodies
    content: dict | None
    scores: dict
    annotations: dict
    depth: int
    occurred_at: datetime
    created_at: datetime
    last_accessed: datetime
    run_id: uuid.UUID | None
    similarity: float | None
    text_match: float | None
    bm25: float | None
    bm25_en: float | None = None


# Reloaded rows by id; None for an id reloaded but out of the source's scope.
Reloaded = dict[uuid.UUID, CanonicalRow | None]


def interleave(channels, cap: int) -> list:
    """Round-robin over the channels (position 1 of each, then 2, ...), first occurrence wins."""
    seen, merged = set(), []
    for position in range(max((len(c) for c in channels), default=0)):
        for channel in channels:
            if position < len(channel) and channel[position] not in seen:
                seen.add(channel[position])
                merged.append(channel[position])
                if len(merged) == cap:
                    return merged
    return merged
