"""The SDK's write side against a live server: ``POST /records``, ``GET /records/{id}`` and draft
review, with typed results and the server's errors as typed exceptions."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from memseek_client import Conflict, MemseekClient, NotFound, RecordInput, Unprocessable
from memseek_client.models import IngestResult, Record, ReviewResult

from .conftest import LIVE

pytestmark = LIVE


def test_a_written_batch_reads_back_as_typed_records(client):
    when = datetime(2026, 3, 4, 5, 6, 7, tzinfo=timezone.utc)
    result = client.write_records([
        RecordInput(entity="contact.ada", collection="main", type="note", text="Ada prefers email.",
                    occurred_at=when, content={"speaker": "ada"}),
        {"entity": "contact.ada", "collection": "main", "type": "fact", "key": "city", "text": "Ada lives in Turin."},
    ])
    assert isinstance(result, IngestResult)
    assert [outcome.index for outcome in result.inserted] == [0, 1] and result.duplicates == ()
    note = client.get_record(result.inserted[0].id)
    assert isinstance(note, Record)
    assert (note.entity, note.collection, note.type, note.key) == ("contact.ada", "main", "note", None)
    assert note.content["text"] == "Ada prefers email." and note.content["speaker"] == "ada"
    assert datetime.fromisoformat(note.occurred_at) == when
    assert note.ready and note.embedding_space == "minilm-l6-v2"
    assert client.get_record(result.inserted[1].id).key == "city"


def test_a_repeated_dedupe_key_is_reported_as_a_duplicate_and_a_changed_one_is_a_conflict(client):
    record = RecordInput(entity="contact.ada", collection="main", type="note", text="Call on Monday.",
                         dedupe_key="sdk-dedupe-1")
    first = client.write_records([record])
    again = client.write_records([record])
    assert again.inserted == () and again.duplicates[0].id == first.inserted[0].id
    with pytest.raises(Conflict) as caught:
        client.write_records([RecordInput(entity="contact.ada", collection="main", type="note",
                                          text="Call on Tuesday.", dedupe_key="sdk-dedupe-1")])
    assert (caught.value.status, caught.value.code) == (409, "dedupe_conflict")


def test_a_rejected_batch_names_the_offending_value_and_writes_nothing(client):
    before = client.timeline("contact.batch").records
    with pytest.raises(Unprocessable) as caught:
        client.write_records([RecordInput(entity="contact.batch", collection="main", type="note", text="fine"),
                              RecordInput(entity="contact.batch", collection="nope", type="note", text="bad")])
    assert caught.value.code == "unknown_collection" and caught.value.path == "records[1].collection"
    assert client.timeline("contact.batch").records == before == ()


def test_approving_a_draft_writes_its_active_successor_and_rejecting_withdraws_it(client):
    drafts = client.write_records([
        RecordInput(entity="contact.ada", collection="main", type="fact", key="title", text="Ada is CTO.",
                    status="draft"),
        RecordInput(entity="contact.ada", collection="main", type="fact", key="team", text="Ada runs infra.",
                    status="draft"),
    ]).inserted
    approved = client.approve_record(drafts[0].id)
    assert isinstance(approved, ReviewResult) and approved.draft_id == drafts[0].id
    assert (approved.record.status, approved.record.key, approved.record.text) == ("active", "title", "Ada is CTO.")
    rejected = client.reject_record(drafts[1].id)
    assert rejected.draft_id == drafts[1].id and rejected.record.tombstone
    with pytest.raises(Conflict) as caught:
        client.approve_record(approved.record.id)
    assert caught.value.code == "not_a_draft"


def test_another_workspaces_record_is_not_found_and_a_bad_id_names_the_path(client, live):
    mine = client.write_records([RecordInput(entity="contact.ada", collection="main", type="note",
                                             text="mine")]).inserted[0].id
    with MemseekClient(live.url, live.other_key) as other:
        with pytest.raises(NotFound) as caught:
            other.get_record(mine)
        assert (caught.value.status, caught.value.code) == (404, "record_not_found")
        with pytest.raises(NotFound):
            other.approve_record(mine)
    with pytest.raises(Unprocessable) as caught:
        client.get_record("not-a-uuid")
    assert (caught.value.code, caught.value.path) == ("invalid_id", "id")
