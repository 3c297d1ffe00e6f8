"""``POST /search/lexical`` through the SDK against a live server: typed pages, the
``next_after`` page iterator, and the route's 400s as ``BadRequest``. Runs when the server
lists the route (lexical-search.md; built on another branch this session)."""
from __future__ import annotations

import pytest

from memseek_client import BadRequest, MemseekClient, PayloadTooLarge, RecordInput
from memseek_client.models import LexicalResponse, Record

from .conftest import LIVE, require_route

pytestmark = LIVE
TEXTS = ("ZX17 retry failure in the billing job", "ZX17 again: retry budget exhausted", "lunch with the team",
         "the retry queue drained overnight", "ZX17 closed after the fix")


@pytest.fixture(scope="module")
def ids(live, listed_routes):
    require_route(listed_routes, "POST", "/search/lexical")
    with live.client() as memseek:
        inserted = memseek.write_records([RecordInput(entity="service.billing", collection="main", type="note",
                                                      text=text) for text in TEXTS]).inserted
    return [outcome.id for outcome in inserted]


SCOPE = {"entities": ["service.billing"]}


def test_one_exhaustive_page_ranks_by_bm25_with_typed_records(client, ids):
    response = client.lexical_search("ZX17 retry", scope=SCOPE, limit=10)
    assert isinstance(response, LexicalResponse) and response.ranking_version == "bm25_v1"
    page = response.page
    assert page.exhaustive and page.next_after is None and page.corpus_records == len(TEXTS)
    assert {hit.record.id for hit in page.hits} == {ids[0], ids[1], ids[3], ids[4]} == set(ids) - {ids[2]}
    assert all(isinstance(hit.record, Record) and hit.score > 0 for hit in page.hits)
    assert [hit.score for hit in page.hits] == sorted((hit.score for hit in page.hits), reverse=True)
    assert response.timing.retrieval_micros >= 0


def test_the_page_iterator_follows_next_after_until_the_scope_is_scanned(client, ids):
    pages = list(client.iter_lexical_pages("ZX17", scope=SCOPE, scan_limit=2))
    assert len(pages) == 3 and [page.page.scanned_records for page in pages] == [2, 2, 1]
    assert not any(page.page.exhaustive for page in pages) and pages[-1].page.next_after is None
    assert sum(page.page.corpus_records for page in pages) == len(TEXTS)
    assert sorted(hit.record.id for page in pages for hit in page.page.hits) == sorted([ids[0], ids[1], ids[4]])


def test_punctuation_only_text_and_a_bad_limit_are_bad_requests(client, ids):
    with pytest.raises(BadRequest) as caught:
        client.lexical_search("?!", scope=SCOPE)
    assert caught.value.status == 400 and caught.value.path
    with pytest.raises(BadRequest) as caught:
        client.lexical_search("ZX17", scope=SCOPE, limit=0)
    assert caught.value.path == "query.limit"


def test_a_body_over_the_routes_65536_bytes_is_payload_too_large(client, ids):
    with pytest.raises(PayloadTooLarge) as caught:
        client.lexical_search("ZX17 " * 14_000, scope=SCOPE)
    assert caught.value.status == 413


def test_another_workspace_sees_no_hits_and_its_own_corpus(live, ids):
    with MemseekClient(live.url, live.other_key) as other:
        page = other.lexical_search("ZX17 retry", scope=SCOPE).page
    assert page.hits == () and page.corpus_records == 0
