"""What a candidate backend and the search pipeline exchange: the query's context, the
canonical row a backend reloads (its shape is ``catalog_app.record_rows.CanonicalRow``), and how
channels' proposals are merged. Pure data and arithmetic; the backends (``search_app.backends``) hold the SQL."""
from __future__ import annotations

import uuid
from dataclasses import dataclass

from catalog_app.record_rows import CanonicalRow


@dataclass(frozen=True, slots=True)
class QueryContext:
    workspace_id: int
    q: str | None
    vector: list[float] | None
    space: str
    dimensions: int


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
