"""``ls``: what exists under a path, with counts, one level at a time.

| path | entries | order |
| --- | --- | --- |
| the root | ``passages`` and ``facts``, each with its count | fixed |
| ``passages`` / ``facts`` | the catalog's collections (an empty one too), with counts | name |
| ``<kind>/<collection>`` | the entities holding passages (facts) there, with counts | name |
| ``passages/<collection>/<entity>`` | the passages themselves, with ``id`` | newest first |
| ``facts/<collection>/<entity>`` | the current facts, with ``id`` and ``versions`` | key |

Counts are of passages (facts) as ``passages`` defines them. Those of a root or a collection are
the lexical index's maintained statistics (``index_top_k``'s ``n`` with no terms): the index
holds exactly the visible records, so its count of a collection version's active groups is
the passage count without reading a row. A group entry (a root, collection or
entity) is not a record, so its ``id`` is null. A listing pages by ``cursor``: the ``path`` of
the last entry shown (``next_cursor``).
"""
from __future__ import annotations

from django.db import connection

from catalog_app.catalog.runtime import catalog_for_workspace
from catalog_app.lexical.query import IndexScope, index_top_k
from catalog_app.record_rows import PASSAGE_COLUMNS
from catalog_app.record_sql import RECORD, Clause
from memseek_site.errors import RequestError

from .addresses import KINDS, MemoryPath, fact_path
from .hits import hit_shape, passage_roles
from .params import LsRequest
from .passages import fetch_rows, newest_page, page_of, passage_scope, require_held

COUNT_ANALYZER = "bm25_v1"  # any maintained analyzer indexes every visible record


def memory_ls(*, workspace, request: LsRequest) -> dict:
    catalog = catalog_for_workspace(workspace)
    path = request.path
    require_held(workspace_id=workspace.pk, catalog=catalog, path=path, field="path")
    if path.kind is None:
        kinds = KINDS[KINDS.index(request.after.kind) + 1:] if request.after else KINDS
        entries = [_group(MemoryPath(kind), _count(workspace, catalog, kind, None)) for kind in kinds]
        return _listing(path, entries, request.limit)
    if path.collection is None:
        names = [name for name in catalog.names("collection")
                 if request.after is None or name > request.after.collection][:request.limit + 1]
        entries = [_group(path.child(name), _count(workspace, catalog, path.kind, name)) for name in names]
        return _listing(path, entries, request.limit)
    if path.entity is None:
        after = request.after.entity if request.after else None
        groups = _entities(workspace, catalog, path, after, request.limit + 1)
        return _listing(path, [_group(path.child(name), count) for name, count in groups], request.limit)
    if path.kind == "facts":
        return _listing(path, _facts(workspace, catalog, path, request), request.limit)
    return _passages(workspace, catalog, path, request)


def _count(workspace, catalog, kind: str, collection: str | None) -> int:
    """Passages (``kind`` facts: keyed passages) of ``collection`` (None: every one)."""
    names = catalog.names("collection") if collection is None else [collection]
    versions = tuple((name, definition.version) for name in names
                     for definition in catalog.versions("collection", name))
    scope = IndexScope(statuses=("active",), keyed=True if kind == "facts" else None, versions=versions)
    return index_top_k(workspace_id=workspace.pk, analyzer=COUNT_ANALYZER, terms=(), k=1, scope=scope).n


def _entities(workspace, catalog, path: MemoryPath, after: str | None, limit: int) -> list[tuple[str, int]]:
    """``(entity, count)`` under ``path`` (a collection), by entity, after ``after``."""
    scope = passage_scope(workspace_id=workspace.pk, catalog=catalog, path=path)
    if after is not None:
        scope = scope & Clause("r.entity > %s", (after,))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT r.entity, count(*) FROM {RECORD} r WHERE {scope.sql} "
                       "GROUP BY r.entity ORDER BY r.entity LIMIT %s", [*scope.params, limit])
        return cursor.fetchall()


def _facts(workspace, catalog, path: MemoryPath, request: LsRequest) -> list[dict]:
    scope = passage_scope(workspace_id=workspace.pk, catalog=catalog, path=path)
    if request.after is not None:
        scope = scope & Clause("r.key > %s", (request.after.leaf,))
    # versions: every row of the fact's active lane, as /memory/history lists them.
    rows = fetch_rows(f"SELECT {PASSAGE_COLUMNS} FROM {RECORD} r WHERE {scope.sql} ORDER BY r.key LIMIT %s",
                      [*scope.params, request.limit + 1])
    versions = _versions(workspace, path, [row.key for row in rows])
    return [{"name": row.key, "kind": "fact", "path": fact_path(row), "id": str(row.id), "text": row.text,
             "versions": versions.get(row.key, 0), "occurred_at": row.occurred_at.isoformat()} for row in rows]


def _versions(workspace, path: MemoryPath, keys: list[str]) -> dict[str, int]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT r.key, count(*) FROM {RECORD} r WHERE r.workspace_id = %s AND r.collection = %s "
                       "AND r.entity = %s AND r.status = 'active' AND r.key = ANY(%s) GROUP BY r.key",
                       [workspace.pk, path.collection, path.entity, keys])
        return dict(cursor.fetchall())


def _passages(workspace, catalog, path: MemoryPath, request: LsRequest) -> dict:
    scope = passage_scope(workspace_id=workspace.pk, catalog=catalog, path=path)
    cursor = None
    if request.after is not None:
        found = fetch_rows(f"SELECT {PASSAGE_COLUMNS} FROM {RECORD} r WHERE {scope.sql} AND r.id = %s",
                           [*scope.params, request.after.record_id])
        if not found:
            raise RequestError("request_schema", "is not an entry of this listing; pass next_cursor from the "
                               "previous page", "cursor")
        cursor = (found[0].occurred_at, found[0].seq)
    rows = newest_page(scope=scope, cursor=cursor, limit=request.limit)
    shown, more = page_of(rows, request.limit)
    entries = [{"name": str(row.id), "kind": "passage", **hit_shape(row, passage_roles(row, catalog))}
               for row in shown]
    return {"path": path.text, "entries": entries, "next_cursor": entries[-1]["path"] if more else None}


def _group(path: MemoryPath, count: int) -> dict:
    kind = ("root", "collection", "entity")[path.depth - 1]
    name = [path.kind, path.collection, path.entity][path.depth - 1]
    return {"name": name, "kind": kind, "path": path.text, "id": None, "count": count}


def _listing(path: MemoryPath, entries: list[dict], limit: int) -> dict:
    shown = entries[:limit]
    return {"path": path.text, "entries": shown,
            "next_cursor": shown[-1]["path"] if len(entries) > limit else None}
