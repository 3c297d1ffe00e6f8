"""``POST /search/lexical``: parse, hold a retrieval slot, retrieve, answer the page's shape.

``timing.retrieval_micros`` is the wall time of ``lexical_retrieve`` alone (the figures, the
hits and their records), excluding authentication, parsing, waiting for a slot and
serialisation, as lexical-search.md defines it.
"""
from __future__ import annotations

import time

from catalog_app.catalog.runtime import catalog_for_workspace
from catalog_app.models import Workspace
from catalog_app.selectors import records_by_id

from .corpus import LexicalCorpus, lexical_corpus
from .indexed import indexed_page
from .recheck import recheck_hits
from .request import CONTRACT_VERSION, MODE, LexicalRequest, parse_lexical_request
from .scan import LexicalPage, lexical_scan
from .slots import retrieval_slot

def lexical_search(*, workspace: Workspace, body) -> dict:
    """The response to ``body``. Raises ``ApiError``: 400 for the request, 503 ``retrieval_busy``,
    500 ``retrieval_inconsistency``."""
    request = parse_lexical_request(body)
    corpus = lexical_corpus(workspace_id=workspace.pk, request=request, catalog=catalog_for_workspace(workspace))
    with retrieval_slot():
        started = time.perf_counter_ns()
        page, records = lexical_retrieve(workspace=workspace, corpus=corpus, request=request)
        micros = (time.perf_counter_ns() - started) // 1000
    return {
        "contract_version": CONTRACT_VERSION,
        "scope": _scope_echo(request, corpus),
        "mode": MODE,
        "ranking_version": request.analyzer,
        "page": {
            "hits": [{"record": records[record_id], "score": score} for record_id, score in page.hits],
            "matched_records": page.matched,
            "corpus_records": page.corpus,
            "scanned_records": page.scanned,
            "scanned_bytes": page.scanned_bytes,
            "exhaustive": page.exhaustive,
            "next_after": str(page.next_after) if page.next_after is not None else None,
        },
        "timing": {"retrieval_micros": micros},
    }


def lexical_retrieve(*, workspace: Workspace, corpus: LexicalCorpus,
                     request: LexicalRequest) -> tuple[LexicalPage, dict]:
    """The page (from the index when it gives the scan's figures, else the scan) and the record
    payload of every hit, each hit rechecked against its record (``recheck``)."""
    page = indexed_page(corpus, request) or lexical_scan(corpus, request)
    recheck_hits(corpus, request, page)
    records = records_by_id(workspace=workspace, record_ids=[record_id for record_id, _ in page.hits])
    return page, records


def _scope_echo(request: LexicalRequest, corpus: LexicalCorpus) -> dict:
    """The scope that ran: the six scope keys with their defaults applied (collections: the
    source collections), plus the optional bounds when given."""
    scope = request.scope
    echo = {"collections": list(corpus.collections),
            "entities": list(scope.entities) if scope.entities is not None else None,
            "types": list(scope.types) if scope.types is not None else None,
            "status": scope.status, "keyed": "any" if scope.keyed is None else scope.keyed,
            "versions": scope.versions}
    if scope.collection_versions:
        echo["collection_versions"] = {name: list(numbers) for name, numbers in scope.collection_versions}
    for key in ("occurred_after", "occurred_before"):
        if getattr(scope, key) is not None:
            echo[key] = getattr(scope, key).isoformat()
    if scope.depth_lte is not None:
        echo["depth_lte"] = scope.depth_lte
    return echo
