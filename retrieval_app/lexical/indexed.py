"""The lexical page from the inverted index (``catalog_app.lexical``), when it gives exactly the
figures the full scan would.

That is when the request has no cursor, its analyzer is maintained (``LEXICAL_ANALYZERS``), its
corpus is one the index expresses
(``LexicalCorpus.index_scope``) and its budgets admit every source row of the scope (the index
maintains each collection's source rows and bytes, ``record_sql.source_bytes`` summed). Then the
scan would admit every row, so ``scanned_records`` / ``scanned_bytes`` are those totals, the
corpus is the index's N, ``matched_records`` and the hits are the index's, the page is
exhaustive and there is no cursor. Any other request is answered by the scan
(``retrieval_app.lexical.scan``), which stays the definition this path is tested against.

The index holds a workspace's records only once it has been built for them: records written
before the index existed are added by ``lexical_backfill``, which recounts the source totals
last. So the index answers for a set of collections only after its source row count has been
found equal to the record table's, and for ``en_v1`` once no record of them lacks its stored
terms (checked at most once per ``VERIFIED_TTL_S`` per process and analyzer, as counting is
linear in the rows); until then the scan answers, with the same figures.
"""
from __future__ import annotations

import threading
import time

from django.db import connection

from catalog_app.lexical.analyzers import analyzer_get, maintained_analyzers
from catalog_app.lexical.query import index_top_k, source_totals
from catalog_app.record_sql import RECORD

from .corpus import LexicalCorpus
from .request import LexicalRequest
from .scan import LexicalPage

VERIFIED_TTL_S = 60
_verified: dict[tuple, float] = {}
_verified_lock = threading.Lock()


def indexed_page(corpus: LexicalCorpus, request: LexicalRequest) -> LexicalPage | None:
    """The page from the index, or None when only the scan gives this request's figures."""
    if (request.after is not None or corpus.index_scope is None
            or analyzer_get(request.analyzer) not in maintained_analyzers()):
        return None
    rows, size = source_totals(workspace_id=corpus.workspace_id, collection_ids=corpus.collections)
    if rows > request.scan_limit or size > request.scan_bytes_limit or not _built(corpus, rows, request.analyzer):
        return None
    top = index_top_k(workspace_id=corpus.workspace_id, analyzer=request.analyzer, terms=request.terms, k=request.limit,
                      scope=corpus.index_scope)
    return LexicalPage(hits=top.hits, matched=top.matched, corpus=top.n, scanned=rows, scanned_bytes=size,
                       exhaustive=True, next_after=None, average_length=top.average_length, dfs=top.dfs)


def _built(corpus: LexicalCorpus, rows: int, analyzer: str) -> bool:
    """Whether the index holds every source row of ``corpus``'s collections under ``analyzer``
    (module docstring): for ``en_v1``, also that no record of them still lacks its stored terms
    (written before the analyzer existed and not yet visited by ``lexical_backfill``)."""
    key = (corpus.workspace_id, corpus.collections, analyzer)
    now = time.monotonic()
    with _verified_lock:
        if now - _verified.get(key, -VERIFIED_TTL_S) < VERIFIED_TTL_S:
            return True
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {RECORD} r WHERE r.workspace_id = %s AND r.collection = ANY(%s)",
                       [corpus.workspace_id, list(corpus.collections)])
        if cursor.fetchone()[0] != rows:
            return False
        if analyzer_get(analyzer).prepare is not None:
            cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {RECORD} r WHERE r.workspace_id = %s "
                           "AND r.collection = ANY(%s) AND r.en_tf IS NULL)",
                           [corpus.workspace_id, list(corpus.collections)])
            if cursor.fetchone()[0]:
                return False
    with _verified_lock:
        _verified[key] = now
    return True
