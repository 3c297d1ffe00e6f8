"""``read`` (one passage or fact, whole, by path) and ``history`` (every value of one fact).

``read`` of a passage path serves that record, whichever version or status it is, as long as it
is live (ready, not retracted) and its collection and entity are the path's: any address a
result ever showed stays readable. ``read`` of a fact path serves the current value of the
active lane (``record_sql``'s ``current_in_lane``); a lane whose newest row is a tombstone or
still processing has no current value, so it is 404.

``history`` lists every row of the active lane, oldest first by ``seq`` (the transaction axis
that defines "current"), each with the day it was said (``occurred_at``, UTC), its state —
``current``, ``superseded``, ``retracted`` (a tombstone) or ``pending`` (not ready yet) — and
the id of the row that superseded it.
"""
from __future__ import annotations

from datetime import timezone

from django.db import connection

from catalog_app.catalog.runtime import catalog_for_workspace
from catalog_app.record_rows import PASSAGE_COLUMNS, PassageRow, passage_row
from catalog_app.record_sql import RECORD, Clause, current_in_lane, live
from memseek_site.errors import ApiError

from .addresses import MemoryPath, fact_path, passage_path
from .hits import passage_roles
from .params import PathPage
from .passages import cursor_text, passage_scope


def memory_read(*, workspace, path: MemoryPath) -> dict:
    catalog = catalog_for_workspace(workspace)
    if path.kind == "facts":
        scope = passage_scope(workspace_id=workspace.pk, catalog=catalog, path=path) & Clause("r.key = %s",
                                                                                              (path.leaf,))
    else:
        scope = Clause(f"r.workspace_id = %s AND {live('r')} AND r.collection = %s AND r.entity = %s AND r.id = %s",
                       (workspace.pk, path.collection, path.entity, path.record_id))
    current = current_in_lane("r")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {PASSAGE_COLUMNS}, {current.sql} FROM {RECORD} r WHERE {scope.sql}",
                       [*current.params, *scope.params])
        found = cursor.fetchone()
    if found is None:
        raise ApiError("path_not_found", f"nothing is stored at {path.text!r}", "path")
    row = passage_row(found[:-1])
    return {**_whole(row, catalog, path), "current": bool(found[-1])}


def _whole(row: PassageRow, catalog, path: MemoryPath) -> dict:
    fact = fact_path(row) if row.key is not None and row.status == "active" else None
    return {"id": str(row.id), "path": path.text, "passage_path": passage_path(row), "fact_path": fact,
            "collection": row.collection, "entity": row.entity, "type": row.type, "key": row.key,
            "status": row.status, "roles": list(passage_roles(row, catalog)), "text": row.text,
            "content": row.content, "derived_from": [str(parent) for parent in row.derived_from],
            "occurred_at": row.occurred_at.isoformat(), "recorded_at": row.created_at.isoformat()}


def memory_history(*, workspace, request: PathPage) -> dict:
    path = request.path
    catalog = catalog_for_workspace(workspace)
    if path.collection not in catalog.names("collection"):
        raise ApiError("path_not_found", f"nothing is stored at {path.text!r}", "path")
    lane = Clause("r.workspace_id = %s AND r.collection = %s AND r.entity = %s AND r.key = %s AND r.status = 'active'",
                  (workspace.pk, path.collection, path.entity, path.leaf))
    after_seq = request.page.cursor[1] if request.page.cursor else 0
    current = current_in_lane("r")
    # The successor is the next row of the lane by seq, over the whole lane (not only this page).
    sql = (f"SELECT * FROM (SELECT {PASSAGE_COLUMNS}, r.enriched_at IS NOT NULL, r.tombstone, {current.sql}, "
           f"lead(r.id) OVER (ORDER BY r.seq) FROM {RECORD} r WHERE {lane.sql}) lane "
           "WHERE lane.workspace_seq > %s ORDER BY lane.workspace_seq LIMIT %s")
    with connection.cursor() as cursor:
        cursor.execute(sql, [*current.params, *lane.params, after_seq, request.page.limit + 1])
        found = cursor.fetchall()
    if not found and after_seq == 0:
        raise ApiError("path_not_found", f"nothing is stored at {path.text!r}", "path")
    limit = request.page.limit
    versions, next_cursor = found[:limit], None
    if len(found) > limit:
        next_cursor = cursor_text(passage_row(found[limit - 1][:-4]))
    return {"path": path.text, "collection": path.collection, "entity": path.entity, "key": path.leaf,
            "versions": [_version(values, catalog) for values in versions], "next_cursor": next_cursor}


def _version(values, catalog) -> dict:
    *columns, ready, tombstone, current, successor = values
    row = passage_row(columns)
    if not ready:
        state = "pending"
    elif tombstone:
        state = "retracted"
    else:
        state = "current" if current else "superseded"
    return {"id": str(row.id), "path": passage_path(row), "fact_path": fact_path(row), "text": row.text,
            "status": state, "superseded_by": str(successor) if successor else None,
            "said_on": row.occurred_at.astimezone(timezone.utc).date().isoformat(),
            "occurred_at": row.occurred_at.isoformat(), "recorded_at": row.created_at.isoformat(),
            "roles": list(passage_roles(row, catalog))}
