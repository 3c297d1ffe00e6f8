"""Reads of the keyed and derived records a brief shows (``known``, ``facts``).

Named facts are read on the valid-time axis as ``/retrieve`` reads them: a fact counts as of the
window's end when it occurred before that end and no newer value of its lane (by
``(occurred_at, seq)``) occurred before it either (``record_sql.current_in_lane``). Every query
starts from the workspace and the live rule; nothing here writes.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection

from catalog_app.record_rows import FACT_COLUMNS, FactRow
from catalog_app.record_sql import RECORD, as_of_cut, current_in_lane, live
from search_app.engine.spec import SYSTEM_COLLECTION


@dataclass(frozen=True, slots=True)
class SourceRef:
    """A record another was derived from, as much as its address needs."""

    id: uuid.UUID
    collection: str
    entity: str
    key: str | None
    status: str


def _as_of(end: datetime | None) -> datetime | None:
    # The window's end is exclusive; record_sql's as-of instants are inclusive.
    return end - timedelta(microseconds=1) if end is not None else None


def current_facts(*, workspace_id: int, entity: str | None, end: datetime | None, limit: int) -> list[FactRow]:
    """The entity's (or every entity's) active named facts current as of ``end`` on the valid
    axis, newest first (``occurred_at``, then ``seq``), at most ``limit``."""
    as_of = _as_of(end)
    cut = as_of_cut("valid", as_of)
    current = current_in_lane(axis="valid", as_of=as_of)
    conditions = ["r.workspace_id = %s", live(), "r.key IS NOT NULL", "r.status = 'active'", "r.collection <> %s",
                  cut.sql, current.sql]
    params: list = [workspace_id, SYSTEM_COLLECTION, *cut.params, *current.params]
    if entity is not None:
        conditions.append("r.entity = %s")
        params.append(entity)
    params.append(limit)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {FACT_COLUMNS} FROM {RECORD} r "
                       f"WHERE {' AND '.join(conditions)} ORDER BY r.occurred_at DESC, r.seq DESC LIMIT %s", params)
        return [FactRow(*row) for row in cursor.fetchall()]


def current_among(*, workspace_id: int, ids: list[uuid.UUID], end: datetime | None) -> set[uuid.UUID]:
    """Those of ``ids`` that are current in their lane as of ``end`` on the valid axis (events
    always are)."""
    if not ids:
        return set()
    current = current_in_lane(axis="valid", as_of=_as_of(end))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT r.id FROM {RECORD} r WHERE r.workspace_id = %s AND r.id = ANY(%s) AND {current.sql}",
                       [workspace_id, ids, *current.params])
        return {row[0] for row in cursor.fetchall()}


def derivation_sources(*, workspace_id: int, ids: list[uuid.UUID]) -> dict[uuid.UUID, list[SourceRef]]:
    """For each of ``ids``, the records of the same workspace it was derived from, in its
    ``derived_from`` order (a source since erased is left out)."""
    if not ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT r.id, s.id, s.collection, s.entity, s.key, s.status FROM {RECORD} r "
            f"CROSS JOIN LATERAL unnest(r.derived_from) WITH ORDINALITY AS d(id, n) "
            f"JOIN {RECORD} s ON s.id = d.id AND s.workspace_id = r.workspace_id "
            f"WHERE r.workspace_id = %s AND r.id = ANY(%s) ORDER BY r.id, d.n", [workspace_id, ids])
        sources: dict[uuid.UUID, list[SourceRef]] = {}
        for record_id, *source in cursor.fetchall():
            sources.setdefault(record_id, []).append(SourceRef(*source))
        return sources
