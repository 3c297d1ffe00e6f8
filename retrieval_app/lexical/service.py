"""``POST /search/lexical``: parse, hold a retrieval slot, retrieve, answer the page's shape.

``timing.retrieval_micros`` is the wall time of ``lexical_retrieve`` alone (the figures, the
hits and their records), excluding authentication, parsing, waiting for a slot and
serialisation, as lexical-search.md defines it.
"""
from __future__ import annotations

import time

from catalog_app.bm25_terms import term_frequencies
from catalog_app.catalog.runtime import catalog_for_workspace
from catalog_app.models import Record, Workspace
from catalog_app.selectors import records_by_id

from .corpus import LexicalCorpus, lexical_corpus
from .request import CONTRACT_VERSION, MODE, LexicalRequest, parse_lexical_request
from .scan import LexicalInconsistency, LexicalPage, lexical_scan
from .slots import retrieval_slot

RANKING_VERSION = "bm25_v1"


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
        "ranking_version": RANKING_VERSION,
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


def lexical_retrieve(*, workspace: Workspace, corpus: LexicalCorpus, request: LexicalRequest) -> tuple[LexicalPage, dict]:
    """The page and the record payload of every hit. A hit whose record cannot be read back is
    ``LexicalInconsistency`` (500): a candidate is never dropped silently."""
    page = lexical_scan(corpus, request)
    hit_ids = [record_id for record_id, _ in page.hits]
    records = records_by_id(workspace=workspace, record_ids=hit_ids)
    missing = [str(record_id) for record_id in hit_ids if record_id not in records]
    if missing:
        raise LexicalInconsistency("retrieval_inconsistency", f"hits {', '.join(missing)} have no record in this "
                                   "workspace; the request failed rather than drop them")
    _recheck_terms(workspace, hit_ids, request.terms)
    return page, records


def _recheck_terms(workspace: Workspace, hit_ids, terms: tuple[str, ...]) -> None:
    """Each hit's stored term frequencies and length (what it was scored by) must be those of
    its text; a hit scored from corrupted statistics fails the request."""
    rows = Record.objects.filter(workspace=workspace, pk__in=hit_ids).values_list("pk", "text", "bm25_tf",
                                                                                  "bm25_length")
    for record_id, text, stored, length in rows:
        counts, actual_length = term_frequencies(text)
        if actual_length != length or any(stored.get(term) != counts.get(term) for term in terms):
            raise LexicalInconsistency("retrieval_inconsistency", f"record {record_id}'s stored bm25_v1 term "
                                       "frequencies disagree with its text; the request failed rather than rank "
                                       "it by them")


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
