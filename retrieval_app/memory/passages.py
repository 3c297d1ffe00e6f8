"""What the memory lookups read, and the one SQL home of their scope and pages.

A *passage* is a live (ready, not retracted), ``active``, current-in-lane record of one of the
workspace's collections: every event, and the current value of every keyed lane (the
transaction axis, as ``catalog_app.record_sql.record_scope(current=True)`` defines it; drafts
are proposals, not memory). A *fact* is such a passage with a key. Every rule comes from
``record_sql``; this module only adds the path, the entity and the date window, each of which
narrows.

A path that names something the workspace does not hold (an unknown collection, an entity
with no passages or facts there) is ``404 path_not_found``, never an empty answer, so another
workspace's paths look exactly like missing ones.

Pages are newest first by ``(occurred_at, seq)`` (grep's by ``seq``); a cursor is the position
of the last row shown, written ``<microseconds since 1970 UTC>.<seq>``, where ``seq`` is the
workspace's own ordinal (``workspace_seq``), so a cursor shows nothing of other workspaces' writes.
"""
from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone

from django.db import connection

from catalog_app.catalog.registry import Catalog
from catalog_app.record_rows import PASSAGE_COLUMNS, PassageRow, passage_row
from catalog_app.record_sql import FALSE, RECORD, Clause, record_scope
from memseek_site.errors import ApiError, RequestError

from .addresses import MemoryPath
from .dates import DateWindow
from .hits import collection_of

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
CURSOR = re.compile(r"^(-?\d{1,18})\.(\d{1,19})$")


def fetch_rows(sql: str, params: Sequence) -> list[PassageRow]:
    with connection.cursor() as cursor:
        cursor.execute(sql, list(params))
        return [passage_row(values) for values in cursor.fetchall()]


def passage_scope(*, workspace_id: int, catalog: Catalog, path: MemoryPath, entity: str | None = None,
                  window: DateWindow = DateWindow(), alias: str = "r") -> Clause:
    """SQL: the passages (or, under ``facts/``, the facts) under ``path`` prefix, of ``entity``
    when given, inside ``window``. Only the path's first three segments narrow here."""
    versions = {name: [d.version for d in catalog.versions("collection", name)]
                for name in catalog.names("collection")}
    if path.collection is not None:
        versions = {path.collection: versions[path.collection]} if path.collection in versions else {}
    entities = [value for value in (path.entity, entity) if value is not None]
    if not versions or len(set(entities)) > 1:
        return FALSE
    clause = record_scope(workspace_id=workspace_id, collection_versions=versions, entities=entities[:1] or None,
                          status="active", keyed=True if path.kind == "facts" else None, current=True, alias=alias)
    if window.start is not None:
        clause = clause & Clause(f"{alias}.occurred_at >= %s", (window.start,))
    if window.end is not None:
        clause = clause & Clause(f"{alias}.occurred_at < %s", (window.end,))
    return clause


def require_held(*, workspace_id: int, catalog: Catalog, path: MemoryPath, field: str, entity: str | None = None,
                 entity_field: str = "entity") -> None:
    """Raise ``404 path_not_found`` unless the workspace holds something under ``path``'s
    collection and entity, and for ``entity`` (a collection of the catalog counts even while
    it is empty)."""
    if path.collection is not None and path.collection not in catalog.names("collection"):
        raise _not_found(MemoryPath(path.kind, path.collection).text, field)
    base = MemoryPath(path.kind, path.collection)
    for value, where in ((path.entity, field), (entity, entity_field)):
        if value is None:
            continue
        scope = passage_scope(workspace_id=workspace_id, catalog=catalog, path=base, entity=value)
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {RECORD} r WHERE {scope.sql})", list(scope.params))
            if not cursor.fetchone()[0]:
                raise _not_found(f"{base.text or 'memory'} for entity {value!r}", where)


def _not_found(what: str, field: str) -> ApiError:
    return ApiError("path_not_found", f"nothing is stored under {what}", field)


def newest_page(*, scope: Clause, cursor: tuple[datetime, int] | None, limit: int,
                extra: Clause | None = None) -> list[PassageRow]:
    """At most ``limit + 1`` passages of ``scope`` (and ``extra``), newest first, after ``cursor``."""
    where = scope if extra is None else scope & extra
    if cursor is not None:
        where = where & Clause("(r.occurred_at, r.workspace_seq) < (%s, %s)", cursor)
    return fetch_rows(f"SELECT {PASSAGE_COLUMNS} FROM {RECORD} r WHERE {where.sql} "
                      "ORDER BY r.occurred_at DESC, r.seq DESC LIMIT %s", [*where.params, limit + 1])


def cursor_text(row: PassageRow) -> str:
    return f"{(row.occurred_at - _EPOCH) // timedelta(microseconds=1)}.{row.seq}"


def parse_cursor(raw: str, field: str = "cursor") -> tuple[datetime, int]:
    match = CURSOR.fullmatch(raw)
    if match is None:
        raise RequestError("request_schema", f"{raw!r} is not a cursor; pass next_cursor from the previous page",
                           field)
    try:
        instant = _EPOCH + timedelta(microseconds=int(match.group(1)))
    except OverflowError:
        raise RequestError("request_schema", f"{raw!r} is not a cursor of this service", field) from None
    seq = int(match.group(2))
    if seq > 2**63 - 1:
        raise RequestError("request_schema", f"{raw!r} is not a cursor of this service", field)
    return instant, seq


def page_of(rows: list[PassageRow], limit: int) -> tuple[list[PassageRow], str | None]:
    """The rows to show and the cursor of the next page (``None``: this was the last)."""
    if len(rows) > limit:
        return rows[:limit], cursor_text(rows[limit - 1])
    return rows, None


def thread_of(anchor, catalog: Catalog) -> tuple[str, tuple[str, ...], object] | None:
    """(column, keys, value) of the anchor's thread field: the column (``content`` or
    ``annotations``), the key path inside it and the anchor's value there (``None`` when it has
    none); ``None`` when its collection version declares no thread field. ``anchor`` is read by
    attribute, so a ``PassageRow`` and a search row both fit."""
    collection = collection_of(anchor, catalog)
    if collection is None or collection.thread_field is None:
        return None
    column, *keys = collection.fields[collection.thread_field].path
    value = anchor.content if column == "content" else anchor.annotations
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    # Declared paths are validated names (FIELD_PATH), so the column is one of two literals.
    return ("content" if column == "content" else "annotations"), tuple(keys), value


def same_thread(anchor, catalog: Catalog) -> Clause:
    """SQL: the row ``r`` carries the anchor's thread value (or, like the anchor, none) at the path
    of the anchor's thread field; TRUE when its collection version declares none."""
    thread = thread_of(anchor, catalog)
    if thread is None:
        return Clause("TRUE")
    column, keys, value = thread
    expression = f"r.{column} #> %s"
    if value is None:
        return Clause(f"({expression}) IS NULL OR jsonb_typeof({expression}) = 'null'", (list(keys), list(keys)))
    return Clause(f"({expression}) = %s::jsonb", (list(keys), json.dumps(value)))
