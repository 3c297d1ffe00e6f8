"""Canonical rows of a retrieval (``catalog_app.record_rows.RetrievalRow``): the fused
candidates reloaded, and the policy records.

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

import uuid

from django.db import connection

from catalog_app.record_rows import RETRIEVAL_COLUMNS, RetrievalRow, jsonb_value
from catalog_app.record_sql import RECORD, Clause, as_of_cut, same_lane, successor

from .scope import CompiledScope


def reload_rows(scope: CompiledScope, ids: list[uuid.UUID]) -> dict[uuid.UUID, RetrievalRow]:
    """The fused candidates still inside the memory scope, by id."""
    if not ids:
        return {}
    rows = _select(scope, Clause("r.id = ANY(%s::uuid[])", ([str(i) for i in ids],)) & scope.memory, "")
    return {row.id: row for row in rows}


def policy_rows(scope: CompiledScope) -> list[RetrievalRow]:
    """Every policy record in scope, by collection, entity, key and valid time."""
    return _select(scope, scope.policies, "ORDER BY r.collection, r.entity, r.key NULLS LAST, r.occurred_at, r.seq")


def _select(scope: CompiledScope, where: Clause, order: str) -> list[RetrievalRow]:
    known = as_of_cut("transaction", scope.as_of if scope.axis == "transaction" else None, "n")
    known_sql, known_params = (f" AND {known.sql}", list(known.params)) if known.params else ("", [])
    lane = f"r.key IS NOT NULL AND {same_lane('r', 'n')}"
    sql = (f"SELECT {RETRIEVAL_COLUMNS}, vs.id, vs.occurred_at, ts.id, ts.created_at FROM {RECORD} r "
           f"LEFT JOIN LATERAL (SELECT n.id, n.occurred_at FROM {RECORD} n WHERE {lane} "
           f"AND {successor('valid')}{known_sql} ORDER BY n.occurred_at, n.seq LIMIT 1) vs ON TRUE "
           f"LEFT JOIN LATERAL (SELECT n.id, n.created_at FROM {RECORD} n WHERE {lane} "
           f"AND {successor('transaction')}{known_sql} ORDER BY n.seq LIMIT 1) ts ON TRUE "
           f"WHERE {where.sql} {order}")
    with connection.cursor() as cursor:
        cursor.execute(sql, [*known_params, *known_params, *where.params])
        return [_row(scope, values) for values in cursor.fetchall()]


def _row(scope: CompiledScope, values) -> RetrievalRow:
    content, scores, annotations = (jsonb_value(value) for value in values[8:11])
    valid_id, valid_to, transaction_id, recorded_until = values[19:23]
    if scope.axis == "valid":
        in_slice = valid_id is not None and (scope.as_of is None or valid_to <= scope.as_of)
        superseded_by, superseded_at = (valid_id, valid_to) if in_slice else (None, None)
    else:
        superseded_by, superseded_at = transaction_id, recorded_until
    return RetrievalRow(*values[:8], content, scores, annotations, values[11], tuple(values[12] or ()),
                        *values[13:19], valid_to=valid_to, recorded_until=recorded_until, superseded_by=superseded_by,
                        superseded_at=superseded_at)
