"""Lexical candidates from the term index (``catalog_app.lexical``) for the ``pg`` backend.

The index holds exactly the visible records (live and current in their lane), with their
collection, version, type, status, keyed-ness and entity. A source whose scope says no more
than that (current versions, no time or depth bounds, no typed ``where``) is an ``IndexScope``,
and its lexical channels read the index: the BM25 channel ``bm25_v1`` with the exact statistics
of the scope, the text channel the query's English lexemes (``english``, the lexemes the stored
``tsvector`` holds) best BM25-over-lexemes first. Any other source, and a source scoped to
entities (whose few records the scan reads faster), keeps the exact scan of ``pg_bm25`` over the
same analyzer, which computes the same ranking and statistics.
"""
from __future__ import annotations

import uuid

from django.db import connection

from catalog_app.lexical.analyzers import analyzer_get, maintained_analyzers
from catalog_app.lexical.query import IndexScope, index_top_k

from ..engine.bm25 import Bm25Stats, bm25_stats
from ..engine.resolve import ResolvedSource
from .pg_bm25 import BM25_V1, ENGLISH, scan_candidates


def index_scope(resolved: ResolvedSource) -> IndexScope | None:
    """The source's scope as an ``IndexScope``, or None when the index cannot answer it exactly
    (history, a time or depth bound, or a typed filter)."""
    source = resolved.source
    scope = source.scope
    if (source.where or scope.versions != "current" or scope.occurred_after is not None
            or scope.occurred_before is not None or scope.depth_lte is not None):
        return None
    statuses = ("active", "draft") if scope.status == "all" else (scope.status,)
    return IndexScope(collection_ids=tuple(sorted({c.name for c in resolved.versions})), statuses=statuses,
                      types=scope.types, keyed=scope.keyed, entities=scope.entities,
                      versions=tuple(sorted((c.name, c.version) for c in resolved.versions)))


def english_terms(q: str | None) -> tuple[str, ...]:
    """The distinct English lexemes of ``q`` (what ``to_tsvector('english', q)`` holds), sorted."""
    if not q:
        return ()
    with connection.cursor() as cursor:
        cursor.execute("SELECT tsvector_to_array(to_tsvector('english', %s))", [q])
        return tuple(cursor.fetchone()[0])


def query_terms(analyzer: str, q: str | None) -> tuple[str, ...]:
    """The distinct terms of ``q`` under ``analyzer``."""
    query_terms = analyzer_get(analyzer).query_terms
    return english_terms(q) if query_terms is None else tuple(query_terms(q or ""))


def bm25_candidates(resolved: ResolvedSource, workspace_id: int, q: str, cap: int,
                    analyzer: str = BM25_V1) -> tuple[Bm25Stats, list]:
    """A BM25 channel (``bm25_v1``: the bm25 signal's; ``en_v1``: bm25_en's): the statistics of
    ``q``'s terms under ``analyzer`` over the source's scope and filters, and the ``cap`` best
    records by exact BM25 among those sharing a term."""
    return lexical_candidates(resolved, workspace_id, analyzer, query_terms(analyzer, q), cap)


def text_candidates(resolved: ResolvedSource, workspace_id: int, q: str, cap: int) -> list[uuid.UUID]:
    """The text channel: the ``cap`` records matching ``q``'s English lexemes under the source's
    scope and filters, best BM25 over those lexemes first (ties by ascending id)."""
    return lexical_candidates(resolved, workspace_id, ENGLISH, english_terms(q), cap)[1]


def lexical_candidates(resolved: ResolvedSource, workspace_id: int, analyzer: str, terms: tuple[str, ...],
                       cap: int) -> tuple[Bm25Stats, list[uuid.UUID]]:
    """``(statistics, best cap ids)`` of ``terms`` under ``analyzer``: from the index when the
    source's scope is an ``IndexScope`` and the write path maintains ``analyzer``
    (``LEXICAL_ANALYZERS``), else from the exact scan (the same figures)."""
    if not terms:
        return Bm25Stats((), 0, 0.0, ()), []
    scope = index_scope(resolved)
    # An entity's records are few and found by the record table's entity index, so the scan reads
    # them faster than the index reads every query term's postings in the workspace.
    if (scope is None or scope.entities is not None
            or analyzer not in {maintained.name for maintained in maintained_analyzers()}):
        return scan_candidates(resolved, workspace_id, analyzer, terms, cap)
    return index_candidates(scope, workspace_id, analyzer, terms, cap)


def index_candidates(scope: IndexScope, workspace_id: int, analyzer: str, terms: tuple[str, ...],
                     cap: int) -> tuple[Bm25Stats, list[uuid.UUID]]:
    """``(statistics, best cap ids)`` of ``terms`` from the index (the same figures as the scan)."""
    top = index_top_k(workspace_id=workspace_id, analyzer=analyzer, terms=terms, k=cap, scope=scope)
    return bm25_stats(terms, top.n, top.average_length, top.dfs), [record_id for record_id, _ in top.hits]
