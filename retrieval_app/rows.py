"""Canonical rows of a retrieval: the fused candidates reloaded, and the policy records.

Both reads re-apply the compiled scope (a candidate that left the scope between its leg and
the reload is dropped, never shown), and carry each keyed record's successors in its lane:

* the valid-time successor — the lane row with the next ``(occurred_at, seq)``; its
  ``occurred_at`` is the record's ``validTo``;
* the transaction-time successor — the lane row with the next ``seq``; its ``created_at`` is
  the record's ``recordedUntil``.

Successors are taken from what the store knew at the transaction-time cut: everything, or, on
the transaction axis with ``asOf``, rows created at or before it. ``superseded_by`` is the
successor on the request's axis that lies inside the slice (valid axis: ``occurred_at <=
asOf``), i.e. what hid the record; events have no successors.
"""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime

from django.db import connection

from catalog_app.record_sql import RECORD, Clause, as_of_cut, same_lane, successor

from .scope import CompiledScope

# ``seq`` is the public one (catalog_app.record_sql "public seq"): it reaches receipts and
# responses, and within the one workspace of a retrieval it sorts like the global seq.
_COLUMNS = ("r.id, r.workspace_seq, r.collection, r.collection_version, r.entity, r.type, r.key, r.text, r.content, "
            "r.scores, r.annotations, r.depth, r.derived_from, r.dedupe_key, r.occurred_at, r.created_at, "
            "r.last_accessed, r.access_count, r.enriched_at IS NOT NULL")


@dataclass(frozen=True, slots=True)
class Row:
    id: uuid.UUID
    seq: int
    collection: str
    collection_version: int
    entity: str
    type: str
    key: str | None
    text: str
    content: dict
    scores: dict
    annotations: dict
    depth: int
    derived_from: tuple[uuid.UUID, ...]
    dedupe_key: str | None
    occurred_at: datetime
    created_at: datetime
    last_accessed: datetime
    access_count: int
    ready: bool
    valid_to: datetime | None
    recorded_until: datetime | None
    superseded_by: uuid.UUID | None
    superseded_at: datetime | None


def reload_rows(scope: CompiledScope, ids: list[uuid.UUID]) -> dict[uuid.UUID, Row]:
    """The fused candidates still inside the memory scope, by id."""
    if not ids:
        return {}
    rows = _select(scope, Clause("r.id = ANY(%s::uuid[])", ([str(i) for i in ids],)) & scope.memory, "")
    return {row.id: row for row in rows}


def policy_rows(scope: CompiledScope) -> list[Row]:
    """Every policy record in scope, by collection, entity, key and valid time."""
    return _select(scope, scope.policies, "ORDER BY r.collection, r.entity, r.key NULLS LAST, r.occurred_at, r.seq")


def _select(scope: CompiledScope, where: Clause, order: str) -> list[Row]:
    known = as_of_cut("transaction", scope.as_of if scope.axis == "transaction" else None, "n")
    known_sql, known_params = (f" AND {known.sql}", list(known.params)) if known.params else ("", [])
    lane = f"r.key IS NOT NULL AND {same_lane('r', 'n')}"
    sql = (f"SELECT {_COLUMNS}, vs.id, vs.occurred_at, ts.id, ts.created_at FROM {RECORD} r "
           f"LEFT JOIN LATERAL (SELECT n.id, n.occurred_at FROM {RECORD} n WHERE {lane} "
           f"AND {successor('valid')}{known_sql} ORDER BY n.occurred_at, n.seq LIMIT 1) vs ON TRUE "
           f"LEFT JOIN LATERAL (SELECT n.id, n.created_at FROM {RECORD} n WHERE {lane} "
           f"AND {successor('transaction')}{known_sql} ORDER BY n.seq LIMIT 1) ts ON TRUE "
           f"WHERE {where.sql} {order}")
    with connection.cursor() as cursor:
        cursor.execute(sql, [*known_params, *known_params, *where.params])
        return [_row(scope, values) for values in cursor.fetchall()]


def _row(scope: CompiledScope, values) -> Row:
    content, scores, annotations = (_json(value) for value in values[8:11])
    valid_id, valid_to, transaction_id, recorded_until = values[19:23]
    if scope.axis == "valid":
        in_slice = valid_id is not None and (scope.as_of is None or valid_to <= scope.as_of)
        superseded_by, superseded_at = (valid_id, valid_to) if in_slice else (None, None)
    else:
        superseded_by, superseded_at = transaction_id, recorded_until
    return Row(*values[:8], content, scores, annotations, values[11], tuple(values[12] or ()), *values[13:19],
               valid_to=valid_to, recorded_until=recorded_until, superseded_by=superseded_by,
               superseded_at=superseded_at)


def _json(value):
    # Django's connection loads jsonb as text (JSONField decodes it); raw queries decode here.
    return json.loads(value) if isinstance(value, str) else value
