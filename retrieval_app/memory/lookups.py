"""``grep``, ``latest`` and ``around``: passages found without ranking and without a model.

* ``grep``: every passage under the path whose text holds the phrase, case ignored (Python's
  ``str.lower``, the tokeniser's), with the phrase's ends on word boundaries wherever it starts
  or ends with a letter or digit: ``E-4021`` finds "error E-4021" but not "E-40213", since an
  id or a code is a whole token. Such a text holds every ``bm25_v1`` term of the phrase, so the
  candidates come from the lexical index (``records_with_all_terms``: the rarest term's postings
  walked newest first from the page's cursor, the others probed; at most
  ``MEMORY_GREP_CANDIDATES`` per page) and each is verified here: only real matches are shown.
  Newest first means the order writes arrived (``seq``), the index's order. ``complete: false``
  says the bound was reached before the page filled, so older matches may exist.
* ``latest``: the newest passages under the path, or every one between two dates.
* ``around``: the passages either side of one, in the same conversation: the same collection
  and entity, events only (a named fact is not a turn), the same thread value when the
  collection version declares a thread field, ordered by ``(occurred_at, seq)``.

``latest`` pages newest first by ``(occurred_at, seq)`` (``passages``), grep by ``seq``; ``around``
returns each side oldest first, as the conversation reads.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from django.db import connection

from catalog_app.catalog.registry import Catalog
from catalog_app.catalog.runtime import catalog_for_workspace
from catalog_app.lexical.query import IndexScope, records_with_all_terms
from catalog_app.record_rows import PASSAGE_COLUMNS, PassageRow
from catalog_app.record_sql import RECORD, TRUE, Clause
from memseek_site.conf import memseek_setting
from memseek_site.errors import ApiError

from .addresses import MemoryPath
from .hits import hit_shape, passage_roles
from .params import AroundRequest, GrepRequest, LatestRequest, Window
from .passages import fetch_rows, newest_page, page_of, passage_scope, require_held, same_thread

GREP_ANALYZER = "bm25_v1"  # its terms are the phrase's (catalog_app.bm25_terms)
_WORD_EDGE = re.compile(r"[^\W_]")


def memory_grep(*, workspace, request: GrepRequest) -> dict:
    catalog = catalog_for_workspace(workspace)
    scope = _window_scope(workspace, catalog, request.window)
    before = _seq_below(workspace.pk, request.page.cursor[1]) if request.page.cursor is not None else None
    matcher = phrase_matcher(request.phrase)
    candidates = scope & matcher.may_hold("r")
    limit, bound = request.page.limit, memseek_setting("MEMORY_GREP_CANDIDATES")
    # Each step walks the next postings of the phrase's rarest term (or the entity's records),
    # newest first, from where the last stopped, four times more each time: a phrase most
    # candidates hold costs one walk of a page, a rare one a few longer ones, and no candidate
    # is read twice.
    steps = records_with_all_terms(workspace_id=workspace.pk, analyzer=GREP_ANALYZER, terms=request.terms,
                                   scope=_index_scope(request.window), walk=limit + 1, before_seq=before)
    read, rows, exhausted = 0, [], True
    for step in steps:
        seqs = step[:bound - read]
        read += len(seqs)
        rows += _verified(candidates, seqs, matcher)
        if len(rows) > limit or read >= bound:
            exhausted = False
            break
    shown, next_cursor = page_of(rows, limit)
    return {"query": request.phrase, "path": request.window.path.text, "found": len(shown),
            "hits": [hit_shape(row, passage_roles(row, catalog)) for row in shown], "next_cursor": next_cursor,
            "complete": len(rows) > limit or exhausted}


def _verified(scope: Clause, seqs: tuple[int, ...], matcher: "PhraseMatcher") -> list[PassageRow]:
    """The passages of ``scope`` among records ``seqs`` whose text holds the phrase, newest
    first (one statement; ``scope`` holds ``matcher.may_hold``, so most candidates without the
    phrase are not read whole)."""
    if not seqs:
        return []
    where = scope & Clause("r.seq = ANY(%s::bigint[])", (list(seqs),))
    rows = fetch_rows(f"SELECT {PASSAGE_COLUMNS} FROM {RECORD} r WHERE {where.sql} ORDER BY r.seq DESC", where.params)
    return [row for row in rows if matcher(row.text)]


def _index_scope(window: Window) -> IndexScope:
    """The lexical index's part of the window: its collection, entity and kind (dates and the
    other passage rules are applied on the record table)."""
    path = window.path
    entity = path.entity or window.entity
    return IndexScope(collection_ids=(path.collection,) if path.collection else None, statuses=("active",),
                      keyed=True if path.kind == "facts" else None, entities=(entity,) if entity else None)


def _seq_below(workspace_id: int, cursor_seq: int) -> int | None:
    """The global seq below which lie exactly the workspace's records before its ordinal
    ``cursor_seq`` (the two sort alike within a workspace); None when every record is."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT seq FROM {RECORD} WHERE workspace_id = %s AND workspace_seq >= %s "
                       "ORDER BY workspace_seq LIMIT 1", [workspace_id, cursor_seq])
        found = cursor.fetchone()
    return found[0] if found else None


@dataclass(frozen=True, slots=True)
class PhraseMatcher:
    """Whether a text holds a phrase as grep defines it (module docstring)."""

    needle: str  # the phrase, lowercased
    pattern: re.Pattern

    def __call__(self, text: str) -> bool:
        return self.pattern.search(text.lower()) is not None

    def may_hold(self, alias: str) -> Clause:
        """SQL keeping every row of ``alias`` whose text may hold the phrase (a superset of
        ``__call__``): an ASCII text whose lowercase holds the needle, or any other text. Python
        and PostgreSQL's ``C`` collation lowercase ASCII alike (A-Z only); beyond it they may
        not (Python's ``str.lower`` turns the Kelvin sign into "k"), so such texts are left to
        ``__call__``, as are all texts when the needle itself is not ASCII."""
        if not self.needle.isascii():
            return TRUE
        return Clause(f"(octet_length({alias}.text) <> char_length({alias}.text) "
                      f"OR strpos(lower({alias}.text COLLATE \"C\"), %s) > 0)", (self.needle,))


def phrase_matcher(phrase: str) -> PhraseMatcher:
    """The ``PhraseMatcher`` of ``phrase``."""
    needle = phrase.lower()
    start = r"(?<![^\W_])" if _WORD_EDGE.match(needle[0]) else ""
    end = r"(?![^\W_])" if _WORD_EDGE.match(needle[-1]) else ""
    return PhraseMatcher(needle, re.compile(start + re.escape(needle) + end))


def memory_latest(*, workspace, request: LatestRequest) -> dict:
    catalog = catalog_for_workspace(workspace)
    scope = _window_scope(workspace, catalog, request.window)
    rows = newest_page(scope=scope, cursor=request.page.cursor, limit=request.page.limit)
    shown, next_cursor = page_of(rows, request.page.limit)
    return {"path": request.window.path.text, "found": len(shown),
            "hits": [hit_shape(row, passage_roles(row, catalog)) for row in shown], "next_cursor": next_cursor}


def memory_around(*, workspace, request: AroundRequest) -> dict:
    catalog = catalog_for_workspace(workspace)
    prefix = MemoryPath("passages", request.path.collection, request.path.entity)
    scope = passage_scope(workspace_id=workspace.pk, catalog=catalog, path=prefix)
    anchors = fetch_rows(f"SELECT {PASSAGE_COLUMNS} FROM {RECORD} r WHERE {scope.sql} AND r.id = %s",
                         [*scope.params, request.path.record_id])
    if not anchors:
        raise ApiError("path_not_found", f"no passage is stored at {request.path.text!r}", "path")
    anchor = anchors[0]
    conversation = scope & Clause("r.key IS NULL") & same_thread(anchor, catalog)
    position = (anchor.occurred_at, anchor.seq)
    before = fetch_rows(f"SELECT {PASSAGE_COLUMNS} FROM {RECORD} r WHERE {conversation.sql} "
                        "AND (r.occurred_at, r.workspace_seq) < (%s, %s) "
                        "ORDER BY r.occurred_at DESC, r.seq DESC LIMIT %s",
                        [*conversation.params, *position, request.before])[::-1] if request.before else []
    after = fetch_rows(f"SELECT {PASSAGE_COLUMNS} FROM {RECORD} r WHERE {conversation.sql} "
                       "AND (r.occurred_at, r.workspace_seq) > (%s, %s) ORDER BY r.occurred_at, r.seq LIMIT %s",
                       [*conversation.params, *position, request.after]) if request.after else []

    def shaped(rows: list[PassageRow]) -> list[dict]:
        return [hit_shape(row, passage_roles(row, catalog)) for row in rows]

    return {"passage": shaped([anchor])[0], "before": shaped(before), "after": shaped(after)}


def _window_scope(workspace, catalog: Catalog, window: Window) -> Clause:
    require_held(workspace_id=workspace.pk, catalog=catalog, path=window.path, field="path", entity=window.entity)
    return passage_scope(workspace_id=workspace.pk, catalog=catalog, path=window.path, entity=window.entity,
                         window=window.dates)
