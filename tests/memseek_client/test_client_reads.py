"""The SDK's reads against a live server: timeline and document history page by page through
the iterators, the document, the collection contracts."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from memseek_client import MemseekClient, RecordInput, Unprocessable
from memseek_client.models import CollectionContract, CollectionField, Document, Health, TimelinePage

from .conftest import LIVE

pytestmark = LIVE
START = datetime(2026, 1, 1, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def written(live):
    """Seven events and three versions of one fact for ``contact.bo``, in one workspace."""
    with live.client() as memseek:
        events = memseek.write_records([
            RecordInput(entity="contact.bo", collection="main", type="note", text=f"Bo note {index}",
                        occurred_at=START + timedelta(days=index)) for index in range(7)]).inserted
        versions = [memseek.write_records([RecordInput(entity="contact.bo", collection="main", type="fact",
                                                        key="city", text=f"Bo lives in city {index}.")]).inserted[0]
                    for index in range(3)]
    return [event.id for event in events], [version.id for version in versions]


def test_iter_timeline_walks_every_page_newest_first(client, written):
    events, versions = written
    first = client.timeline("contact.bo", limit=3)
    assert isinstance(first, TimelinePage) and len(first.records) == 3 and first.next_before_seq is not None
    rows = list(client.iter_timeline("contact.bo", limit=3))
    assert [row.id for row in rows] == [*reversed(versions), *reversed(events)]
    assert [row.seq for row in rows] == sorted((row.seq for row in rows), reverse=True)
    assert [row.id for row in rows[:3]] == [row.id for row in first.records]


def test_timeline_filters_are_sent_as_the_route_reads_them(client, written):
    events, _ = written
    rows = list(client.iter_timeline("contact.bo", types=["note"], collections=["main"], limit=2))
    assert [row.id for row in rows] == list(reversed(events))
    assert client.timeline("contact.bo", status="draft").records == ()


def test_the_document_holds_the_current_fact_and_its_history_every_version(client, written):
    _, versions = written
    document = client.document("contact.bo")
    assert isinstance(document, Document)
    assert [(belief.key, belief.id) for belief in document.beliefs] == [("city", versions[-1])]
    page = client.document_history("contact.bo", "main", "city", limit=2)
    assert len(page.versions) == 2 and page.truncated and page.next_before_seq is not None
    history = list(client.iter_document_history("contact.bo", "main", "city", limit=2))
    assert [version.id for version in history] == list(reversed(versions))
    assert history[-1].text == "Bo lives in city 0."


def test_health_needs_no_key_and_the_openapi_document_lists_every_route_the_client_reads(live):
    with MemseekClient(live.url) as anonymous:
        health = anonymous.health()
    assert isinstance(health, Health)
    assert (health.ok, health.db, health.status, health.degraded) == (True, True, "ok", ())
    assert health.queues["broker"] == "eager" and "pending_records" in health.backlog
    with live.client() as memseek:
        paths = memseek.openapi()["paths"]
    assert {"/timeline", "/document", "/document/history", "/collections"} <= set(paths)


def test_collections_are_typed_contracts(client):
    collections = {contract.name: contract for contract in client.collections().collections}
    assert {"main", "tickets", "profiles"} <= set(collections)
    main = collections["main"]
    assert isinstance(main, CollectionContract) and main.mode == "mixed"
    assert isinstance(main.fields["speaker"], CollectionField) and main.fields["speaker"].path == "content.speaker"


def test_another_workspace_reads_none_of_these_records(live, written):
    with MemseekClient(live.url, live.other_key) as other:
        assert list(other.iter_timeline("contact.bo")) == []
        assert other.document("contact.bo").beliefs == ()


def test_a_bad_read_parameter_names_its_path(client):
    with pytest.raises(Unprocessable) as caught:
        client.timeline("contact.bo", limit=0)
    assert caught.value.path == "limit" and caught.value.status == 422
    with pytest.raises(Unprocessable) as caught:
        client.document("contact.bo", status="sideways")
    assert caught.value.path == "status"
