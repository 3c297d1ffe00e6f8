"""GET /records/{id}, /timeline, /document, /document/history and /collections."""
import json
import shutil
import uuid
from datetime import UTC, datetime

import pytest
from rest_framework.test import APIClient

from catalog_app.catalog.runtime import catalog_for_workspace
from catalog_app.models import Definition, Record, RecordEmbedding, Workspace
from catalog_app.selectors import json_bytes
from catalog_app.services.catalog_load import catalog_load
from catalog_app.text import TRUNCATION_SENTINEL
from tests.conftest import EXAMPLE_CATALOG

from .factories import record_make

WHEN = datetime(2026, 7, 1, 10, 22, tzinfo=UTC)
WHEN_ISO = "2026-07-01T10:22:00+00:00"


def iso(value):
    return value.isoformat() if value is not None else None


def error_of(response):
    body = response.json()
    return response.status_code, body["error"], body.get("path")


# --- GET /records/{id} -----------------------------------------------------------------------

def test_record_get_returns_every_field_but_the_vector(api, catalog):
    parent = record_make(catalog, key="plan", collection="profiles", type="profile", text="Plan: basic")
    run_id = uuid.uuid4()
    record = record_make(
        catalog, collection="profiles", type="profile", key="plan", text="Plan: pro", content={"title": "Plan"},
        derived_from=[parent.id, run_id], run_id=run_id, depth=1, scores={"importance": 7.0},
        annotations={"importance": {"value": 7.0}}, dedupe_key="plan-2", occurred_at=WHEN)
    RecordEmbedding.objects.create(record=record, workspace=catalog, space="minilm-l6-v2", embedding=[0.5] * 384)
    stored_access = record.last_accessed

    response = api.get(f"/records/{record.id}")

    assert response.status_code == 200
    body = response.json()
    record.refresh_from_db()
    assert record.last_accessed > stored_access
    assert body == {
        "id": str(record.id),
        "seq": record.workspace_seq,
        "collection": "profiles",
        "collection_version": 1,
        "collection_hash": catalog_for_workspace(catalog).get("collection", "profiles", 1).contract_hash,
        "entity": "user-1",
        "key": "plan",
        "type": "profile",
        "status": "active",
        "content": {"title": "Plan", "text": "Plan: pro"},
        "tombstone": False,
        "embedding_space": "minilm-l6-v2",
        "scores": {"importance": 7.0},
        "annotations": {"importance": {"value": 7.0}},
        "annotation_meta": {},
        "enrichment_meta": {},
        "enrichment_error": None,
        "ready": True,
        "enriched_at": iso(record.enriched_at),
        "run_id": str(run_id),
        "depth": 1,
        "derived_from": [str(parent.id), str(run_id)],
        "dedupe_key": "plan-2",
        "occurred_at": WHEN_ISO,
        "created_at": iso(record.created_at),
        "last_accessed": iso(record.last_accessed),
    }
    assert "embedding" not in body and "search_vector" not in body and "text" not in body


def test_record_get_of_an_unready_record_without_a_vector(api, catalog):
    record = record_make(catalog, ready=False, enrichment_error={"embedding_v1": "provider down"})
    body = api.get(f"/records/{record.id}").json()
    assert (body["ready"], body["enriched_at"], body["embedding_space"]) == (False, None, None)
    assert body["enrichment_error"] == {"embedding_v1": "provider down"}


def test_record_get_reports_the_enrichment_meta_of_the_processors_the_worker_ran(api, catalog):
    # An outcome's only processors are client ones: nothing for the worker, so no enrichment meta.
    written = api.post("/records", {"records": [{"entity": "e", "collection": "outcomes", "type": "outcome",
                                                 "text": "won", "scores": {"confidence": 0.5}}]}, format="json")
    body = api.get(f"/records/{written.json()['inserted'][0]['id']}").json()
    assert set(body["annotation_meta"]) == {"confidence"}
    assert body["enrichment_meta"] == {}
    record = record_make(catalog, ready=False)
    audit = {"config_hash": "c" * 64, "output_hash": None, "source": "embedding"}
    Record.objects.filter(pk=record.pk).update(annotation_meta={"embedding_v1": {
        **audit, "completed_at": WHEN_ISO, "status": "failed", "space": "minilm-l6-v2"}})
    body = api.get(f"/records/{record.id}").json()
    assert body["enrichment_meta"] == {"embedding_v1": {"completed_at": WHEN_ISO, "status": "failed",
                                                        "space": "minilm-l6-v2"}}


def test_record_get_does_not_touch_when_touch_on_read_is_off(api, catalog, settings):
    settings.MEMSEEK = {"TOUCH_ON_READ": False}
    record = record_make(catalog)
    body = api.get(f"/records/{record.id}").json()
    assert body["last_accessed"] == iso(record.last_accessed)
    assert Record.objects.get(pk=record.pk).last_accessed == record.last_accessed


def test_record_get_prefers_the_active_embedding_space(api, catalog):
    record = record_make(catalog)
    RecordEmbedding.objects.create(record=record, workspace=catalog, space="minilm-l6-v2", embedding=[0.1] * 384)
    RecordEmbedding.objects.create(record=record, workspace=catalog, space="retired-space", embedding=[0.1] * 8)
    assert api.get(f"/records/{record.id}").json()["embedding_space"] == "minilm-l6-v2"


def test_record_get_of_a_tombstone(api, catalog):
    parent = record_make(catalog, key="k")
    tomb = record_make(catalog, key="k", tombstone=True, derived_from=[parent.id])
    body = api.get(f"/records/{tomb.id}").json()
    assert (body["content"], body["tombstone"], body["ready"]) == ({"text": "", "tombstone": True}, True, True)


def test_record_get_of_a_missing_id_is_404(api, catalog):
    missing = uuid.uuid4()
    response = api.get(f"/records/{missing}")
    assert response.status_code == 404
    assert response.json() == {"error": "record_not_found", "detail": f"No record {missing} in this workspace.",
                               "path": "id"}


def test_record_get_of_another_workspaces_id_looks_missing(api, catalog, other_workspace_api):
    foreign = record_make(Workspace.objects.get(name="other-co"))
    stored_access = foreign.last_accessed
    response = api.get(f"/records/{foreign.id}")
    assert response.status_code == 404
    assert response.json() == {"error": "record_not_found", "detail": f"No record {foreign.id} in this workspace.",
                               "path": "id"}
    assert Record.objects.get(pk=foreign.pk).last_accessed == stored_access
    assert other_workspace_api.get(f"/records/{foreign.id}").status_code == 200


@pytest.mark.parametrize("raw", ["not-a-uuid", "123", "0f8fad5b-d9cb-469f-a165-70867728950"])
def test_record_get_of_a_malformed_id_is_422_invalid_id(api, catalog, raw):
    response = api.get(f"/records/{raw}")
    assert response.status_code == 422
    assert response.json() == {"error": "invalid_id", "detail": f"id: {raw!r} is not a UUID", "path": "id"}


def test_record_get_rejects_query_parameters(api, catalog):
    record = record_make(catalog)
    response = api.get(f"/records/{record.id}?fields=text")
    assert error_of(response) == (422, "request_schema", "fields")


def test_reads_need_a_bearer_key(db):
    for path in (f"/records/{uuid.uuid4()}", "/timeline?entity=a", "/document?entity=a",
                 "/document/history?entity=a&collection=main&key=k", "/collections"):
        response = APIClient().get(path)
        assert response.status_code == 401, path
        assert response.json()["error"] == "unauthorized"


# --- GET /timeline ---------------------------------------------------------------------------

def test_timeline_row_shape(api, catalog):
    run_id = uuid.uuid4()
    record = record_make(catalog, key="k", type="fact", text="Alice likes tea", run_id=run_id, occurred_at=WHEN)
    body = api.get("/timeline?entity=user-1").json()
    assert body == {
        "records": [{
            "id": str(record.id), "seq": record.workspace_seq, "collection": "main", "key": "k", "type": "fact",
            "status": "active", "ready": True, "tombstone": False, "run_id": str(run_id), "text": "Alice likes tea",
            "occurred_at": WHEN_ISO, "created_at": iso(record.created_at),
        }],
        "next_before_seq": None,
        "truncated": False,
    }


def test_timeline_is_newest_first_and_keeps_every_version_unready_rows_and_tombstones(api, catalog):
    first = record_make(catalog, key="k", text="v1")
    second = record_make(catalog, key="k", text="v2", ready=False)
    event = record_make(catalog, text="an event")
    tomb = record_make(catalog, key="k", tombstone=True, derived_from=[second.id])
    record_make(catalog, entity="someone-else")
    rows = api.get("/timeline?entity=user-1").json()["records"]
    assert [row["id"] for row in rows] == [str(r.id) for r in (tomb, event, second, first)]
    assert [(row["ready"], row["tombstone"], row["text"]) for row in rows] == [
        (True, True, ""), (True, False, "an event"), (False, False, "v2"), (True, False, "v1")]


def test_timeline_status_lanes(api, catalog):
    active = record_make(catalog, key="k", text="active")
    draft = record_make(catalog, key="k", text="draft", status="draft")

    def ids(query):
        return [row["id"] for row in api.get(f"/timeline?entity=user-1{query}").json()["records"]]

    assert ids("") == [str(active.id)]
    assert ids("&status=active") == [str(active.id)]
    assert ids("&status=draft") == [str(draft.id)]
    assert ids("&status=all") == [str(draft.id), str(active.id)]


def test_timeline_filters_by_collections_and_types(api, catalog):
    note = record_make(catalog, type="note")
    fact = record_make(catalog, type="fact")
    ticket = record_make(catalog, collection="tickets", type="ticket", content={"channel": "email"})

    def ids(query):
        return [row["id"] for row in api.get(f"/timeline?entity=user-1&{query}").json()["records"]]

    assert ids("collections=tickets") == [str(ticket.id)]
    assert ids("collections=main,tickets") == [str(ticket.id), str(fact.id), str(note.id)]
    assert ids("types=note,ticket") == [str(ticket.id), str(note.id)]
    assert ids("collections=main&types=ticket") == []


def test_timeline_hides_system_records_unless_asked(api, catalog):
    note = record_make(catalog)
    run = record_make(catalog, collection="_system", type="run", text="run audit")
    assert [r["id"] for r in api.get("/timeline?entity=user-1").json()["records"]] == [str(note.id)]
    assert [r["id"] for r in api.get("/timeline?entity=user-1&include_system=false").json()["records"]] == [
        str(note.id)]
    assert [r["id"] for r in api.get("/timeline?entity=user-1&include_system=true").json()["records"]] == [
        str(run.id), str(note.id)]
    assert [r["id"] for r in api.get(
        "/timeline?entity=user-1&include_system=true&collections=_system").json()["records"]] == [str(run.id)]


def test_timeline_truncates_text_to_500_characters(api, catalog):
    text = "".join(chr(ord("a") + i % 26) for i in range(2000))
    record_make(catalog, text=text)
    row = api.get("/timeline?entity=user-1").json()["records"][0]
    assert len(row["text"]) == 500
    assert row["text"] == text[:238] + TRUNCATION_SENTINEL + text[-239:]


def test_timeline_pages_with_before_seq(api, catalog):
    records = [record_make(catalog, text=f"r{i}") for i in range(5)]
    newest_first = [str(r.id) for r in reversed(records)]

    page1 = api.get("/timeline?entity=user-1&limit=2").json()
    assert [r["id"] for r in page1["records"]] == newest_first[:2]
    assert (page1["next_before_seq"], page1["truncated"]) == (records[3].workspace_seq, True)

    page2 = api.get(f"/timeline?entity=user-1&limit=2&before_seq={page1['next_before_seq']}").json()
    assert [r["id"] for r in page2["records"]] == newest_first[2:4]
    assert (page2["next_before_seq"], page2["truncated"]) == (records[1].workspace_seq, True)

    page3 = api.get(f"/timeline?entity=user-1&limit=2&before_seq={page2['next_before_seq']}").json()
    assert [r["id"] for r in page3["records"]] == newest_first[4:]
    assert (page3["next_before_seq"], page3["truncated"]) == (None, False)


def test_timeline_page_that_ends_exactly_at_the_limit_has_no_next_page(api, catalog):
    for i in range(2):
        record_make(catalog, text=f"r{i}")
    body = api.get("/timeline?entity=user-1&limit=2").json()
    assert (len(body["records"]), body["next_before_seq"], body["truncated"]) == (2, None, False)


def test_timeline_stops_early_at_the_byte_bound(api, catalog, settings):
    records = [record_make(catalog, text="x" * 300) for _ in range(4)]
    rows = api.get("/timeline?entity=user-1").json()["records"]
    # Room for exactly two rows (the envelope is counted with the widest possible cursor).
    bound = json_bytes({"records": rows[:2], "next_before_seq": 10**19, "truncated": False})
    settings.MEMSEEK = {"MAX_RESPONSE_BYTES": bound}

    response = api.get("/timeline?entity=user-1")
    body = response.json()
    assert len(response.content) <= bound
    assert [r["id"] for r in body["records"]] == [str(records[3].id), str(records[2].id)]
    assert (body["next_before_seq"], body["truncated"]) == (records[2].workspace_seq, True)
    rest = api.get(f"/timeline?entity=user-1&before_seq={body['next_before_seq']}").json()
    assert [r["id"] for r in rest["records"]] == [str(records[1].id), str(records[0].id)]
    assert (rest["next_before_seq"], rest["truncated"]) == (None, False)


def test_timeline_row_larger_than_the_byte_bound_is_409(api, catalog, settings):
    record_make(catalog, text="x" * 300)
    settings.MEMSEEK = {"MAX_RESPONSE_BYTES": 200}
    assert error_of(api.get("/timeline?entity=user-1"))[:2] == (409, "response_too_large")


def test_timeline_of_an_unknown_entity_is_empty(api, catalog):
    assert api.get("/timeline?entity=nobody").json() == {"records": [], "next_before_seq": None,
                                                         "truncated": False}


def test_timeline_never_shows_another_workspaces_records(api, catalog, other_workspace_api):
    record_make(Workspace.objects.get(name="other-co"))
    assert api.get("/timeline?entity=user-1").json()["records"] == []


@pytest.mark.parametrize(("query", "path"), [
    ("", "entity"),
    ("collections=main", "entity"),
    ("entity=", "entity"),
    ("entity=%20", "entity"),
    ("entity=" + "e" * 256, "entity"),
    ("entity=a&entity=b", "entity"),
    ("entity=a&color=red", "color"),
    ("entity=a&limit=0", "limit"),
    ("entity=a&limit=101", "limit"),
    ("entity=a&limit=ten", "limit"),
    ("entity=a&limit=", "limit"),
    ("entity=a&before_seq=0", "before_seq"),
    ("entity=a&before_seq=x", "before_seq"),
    ("entity=a&status=deleted", "status"),
    ("entity=a&status=ACTIVE", "status"),
    ("entity=a&include_system=yes", "include_system"),
    ("entity=a&include_system=1", "include_system"),
    ("entity=a&collections=,", "collections"),
    ("entity=a&collections=Main", "collections"),
    ("entity=a&collections=_system", "collections"),
    ("entity=a&collections=_other&include_system=true", "collections"),
    ("entity=a&types=Bad%20Type", "types"),
])
def test_timeline_rejects_bad_queries(api, catalog, query, path):
    assert error_of(api.get(f"/timeline?{query}")) == (422, "request_schema", path)


# --- GET /document ---------------------------------------------------------------------------

def test_document_belief_shape(api, catalog):
    run_id = uuid.uuid4()
    parent = record_make(catalog, text="evidence")
    belief = record_make(catalog, collection="profiles", type="profile", key="plan", text="Plan: pro",
                         derived_from=[parent.id, run_id], run_id=run_id, depth=1, occurred_at=WHEN)
    body = api.get("/document?entity=user-1").json()
    assert body == {
        "entity": "user-1",
        "status": "active",
        "beliefs": [{
            "collection": "profiles",
            "collection_version": 1,
            "collection_hash": catalog_for_workspace(catalog).get("collection", "profiles", 1).contract_hash,
            "key": "plan", "type": "profile", "text": "Plan: pro", "id": str(belief.id), "run_id": str(run_id),
            "citations": [str(parent.id)], "status": "active", "depth": 1, "ready": True, "enrichment_error": None,
            "occurred_at": WHEN_ISO, "created_at": iso(belief.created_at),
        }],
        "retractions": [],
        "freshness": [],
    }


def test_document_picks_the_newest_row_per_collection_scoped_key(api, catalog):
    record_make(catalog, key="plan", text="main plan v1")
    main_v2 = record_make(catalog, key="plan", text="main plan v2")
    profile = record_make(catalog, collection="profiles", key="plan", text="profile plan")
    color = record_make(catalog, key="color", text="blue")
    record_make(catalog, text="an event without a key")
    record_make(catalog, key="plan", entity="someone-else", text="not this entity")
    beliefs = api.get("/document?entity=user-1").json()["beliefs"]
    assert [(b["collection"], b["key"], b["id"]) for b in beliefs] == [
        ("main", "color", str(color.id)), ("main", "plan", str(main_v2.id)), ("profiles", "plan", str(profile.id))]


def test_document_a_newer_unready_value_hides_the_older_ready_one(api, catalog):
    record_make(catalog, key="plan", text="old and ready")
    pending = record_make(catalog, key="plan", text="new and enriching", ready=False)
    beliefs = api.get("/document?entity=user-1").json()["beliefs"]
    assert [(b["id"], b["text"], b["ready"]) for b in beliefs] == [(str(pending.id), "new and enriching", False)]


def test_document_keeps_draft_and_active_lanes_independent(api, catalog):
    active = record_make(catalog, key="plan", text="active plan")
    draft = record_make(catalog, key="plan", text="proposed plan", status="draft")
    active_doc = api.get("/document?entity=user-1").json()
    draft_doc = api.get("/document?entity=user-1&status=draft").json()
    assert [b["id"] for b in active_doc["beliefs"]] == [str(active.id)]
    assert (draft_doc["status"], [b["id"] for b in draft_doc["beliefs"]]) == ("draft", [str(draft.id)])
    assert draft_doc["beliefs"][0]["status"] == "draft"


def test_document_moves_tombstoned_keys_to_retractions(api, catalog):
    kept = record_make(catalog, key="color", text="blue")
    withdrawn = record_make(catalog, key="plan", text="pro")
    tomb = record_make(catalog, key="plan", tombstone=True, derived_from=[withdrawn.id])
    body = api.get("/document?entity=user-1").json()
    assert [b["id"] for b in body["beliefs"]] == [str(kept.id)]
    assert body["retractions"] == [{"collection": "main", "key": "plan", "id": str(tomb.id), "seq": tomb.workspace_seq}]


def test_document_a_value_after_a_tombstone_is_a_belief_again(api, catalog):
    first = record_make(catalog, key="plan", text="pro")
    tomb = record_make(catalog, key="plan", tombstone=True, derived_from=[first.id])
    again = record_make(catalog, key="plan", text="basic", derived_from=[tomb.id])
    body = api.get("/document?entity=user-1").json()
    assert ([b["id"] for b in body["beliefs"]], body["retractions"]) == ([str(again.id)], [])


def test_document_filters_by_collections_and_skips_system_rows(api, catalog):
    record_make(catalog, key="plan", text="main plan")
    profile = record_make(catalog, collection="profiles", key="plan", text="profile plan")
    record_make(catalog, collection="_system", type="cursor_rebind", key="plan", text="system")
    assert [b["id"] for b in api.get("/document?entity=user-1&collections=profiles").json()["beliefs"]] == [
        str(profile.id)]
    assert [b["collection"] for b in api.get("/document?entity=user-1").json()["beliefs"]] == ["main", "profiles"]


def test_document_of_an_unknown_entity_is_empty(api, catalog):
    assert api.get("/document?entity=nobody").json() == {"entity": "nobody", "status": "active", "beliefs": [],
                                                         "retractions": [], "freshness": []}


def test_document_at_the_record_bound_is_whole(api, catalog, settings):
    settings.MEMSEEK = {"MAX_DOCUMENT_RECORDS": 2}
    record_make(catalog, key="a")
    record_make(catalog, key="b")
    assert len(api.get("/document?entity=user-1").json()["beliefs"]) == 2


def test_document_over_the_record_bound_is_409(api, catalog, settings):
    settings.MEMSEEK = {"MAX_DOCUMENT_RECORDS": 2}
    for key in ("a", "b", "c"):
        record_make(catalog, key=key)
    response = api.get("/document?entity=user-1")
    assert error_of(response) == (409, "document_too_large", None)
    assert "MAX_DOCUMENT_RECORDS" in response.json()["detail"]


def test_document_retractions_count_toward_the_record_bound(api, catalog, settings):
    settings.MEMSEEK = {"MAX_DOCUMENT_RECORDS": 2}
    record_make(catalog, key="a")
    for key in ("b", "c"):
        parent = record_make(catalog, key=key)
        record_make(catalog, key=key, tombstone=True, derived_from=[parent.id])
    assert error_of(api.get("/document?entity=user-1"))[:2] == (409, "document_too_large")


def test_document_over_the_byte_bound_is_409_never_partial(api, catalog, settings):
    record_make(catalog, key="a", text="x" * 400)
    record_make(catalog, key="b", text="y" * 400)
    whole = api.get("/document?entity=user-1")
    settings.MEMSEEK = {"MAX_RESPONSE_BYTES": len(whole.content)}
    assert api.get("/document?entity=user-1").status_code == 200
    settings.MEMSEEK = {"MAX_RESPONSE_BYTES": len(whole.content) - 1}
    response = api.get("/document?entity=user-1")
    assert error_of(response) == (409, "document_too_large", None)
    assert "MAX_RESPONSE_BYTES" in response.json()["detail"]


@pytest.mark.parametrize(("query", "path"), [
    ("", "entity"),
    ("status=active", "entity"),
    ("entity=", "entity"),
    ("entity=a&status=all", "status"),
    ("entity=a&status=deleted", "status"),
    ("entity=a&collections=", "collections"),
    ("entity=a&collections=_system", "collections"),
    ("entity=a&max_staleness=60", "max_staleness"),
    ("entity=a&limit=10", "limit"),
])
def test_document_rejects_bad_queries(api, catalog, query, path):
    assert error_of(api.get(f"/document?{query}")) == (422, "request_schema", path)


# --- GET /document/history -------------------------------------------------------------------

def test_history_lists_every_version_of_one_slot_newest_first(api, catalog):
    run_id = uuid.uuid4()
    v1 = record_make(catalog, key="plan", text="basic", occurred_at=WHEN)
    draft = record_make(catalog, key="plan", text="proposal", status="draft", derived_from=[v1.id, run_id],
                        run_id=run_id, depth=1)
    v2 = record_make(catalog, key="plan", text="pro", ready=False, derived_from=[v1.id], depth=1)
    tomb = record_make(catalog, key="plan", tombstone=True, derived_from=[v2.id], depth=1)
    record_make(catalog, key="color", text="other slot")
    record_make(catalog, collection="profiles", key="plan", text="other collection")
    record_make(catalog, entity="someone-else", key="plan", text="other entity")

    body = api.get("/document/history?entity=user-1&collection=main&key=plan").json()
    assert [v["id"] for v in body["versions"]] == [str(r.id) for r in (tomb, v2, draft, v1)]
    assert (body["next_before_seq"], body["truncated"]) == (None, False)
    assert [(v["status"], v["tombstone"], v["ready"], v["citations"], v["depth"]) for v in body["versions"]] == [
        ("active", True, True, [str(v2.id)], 1),
        ("active", False, False, [str(v1.id)], 1),
        ("draft", False, True, [str(v1.id)], 1),
        ("active", False, True, [], 0),
    ]
    assert body["versions"][-1] == {
        "id": str(v1.id), "seq": v1.workspace_seq, "collection": "main", "collection_version": 1,
        "collection_hash": v1.collection_hash, "key": "plan", "type": "note", "status": "active", "text": "basic",
        "tombstone": False, "ready": True, "enrichment_error": None, "run_id": None, "citations": [], "depth": 0,
        "occurred_at": WHEN_ISO, "created_at": iso(v1.created_at),
    }
    assert body["versions"][2]["run_id"] == str(run_id)


def test_history_pages_with_before_seq(api, catalog):
    versions = [record_make(catalog, key="plan", text=f"v{i}") for i in range(3)]
    page1 = api.get("/document/history?entity=user-1&collection=main&key=plan&limit=2").json()
    assert [v["id"] for v in page1["versions"]] == [str(versions[2].id), str(versions[1].id)]
    assert (page1["next_before_seq"], page1["truncated"]) == (versions[1].workspace_seq, True)
    page2 = api.get("/document/history?entity=user-1&collection=main&key=plan&limit=2"
                    f"&before_seq={page1['next_before_seq']}").json()
    assert [v["id"] for v in page2["versions"]] == [str(versions[0].id)]
    assert (page2["next_before_seq"], page2["truncated"]) == (None, False)


def test_history_stops_early_at_the_byte_bound(api, catalog, settings):
    versions = [record_make(catalog, key="plan", text="x" * 1000) for _ in range(3)]
    rows = api.get("/document/history?entity=user-1&collection=main&key=plan").json()["versions"]
    settings.MEMSEEK = {"MAX_RESPONSE_BYTES": json_bytes(
        {"versions": rows[:1], "next_before_seq": 10**19, "truncated": False})}
    body = api.get("/document/history?entity=user-1&collection=main&key=plan").json()
    assert [v["id"] for v in body["versions"]] == [str(versions[2].id)]
    assert (body["next_before_seq"], body["truncated"]) == (versions[2].workspace_seq, True)


def test_history_of_an_empty_slot(api, catalog):
    assert api.get("/document/history?entity=user-1&collection=main&key=none").json() == {
        "versions": [], "next_before_seq": None, "truncated": False}


@pytest.mark.parametrize(("query", "path"), [
    ("collection=main&key=k", "entity"),
    ("entity=a&key=k", "collection"),
    ("entity=a&collection=main", "key"),
    ("entity=a&collection=main&key=", "key"),
    ("entity=a&collection=main&key=" + "k" * 129, "key"),
    ("entity=a&collection=Main&key=k", "collection"),
    ("entity=a&collection=main&key=k&limit=101", "limit"),
    ("entity=a&collection=main&key=k&limit=0", "limit"),
    ("entity=a&collection=main&key=k&before_seq=-1", "before_seq"),
    ("entity=a&collection=main&key=k&status=draft", "status"),
])
def test_history_rejects_bad_queries(api, catalog, query, path):
    assert error_of(api.get(f"/document/history?{query}")) == (422, "request_schema", path)


# --- GET /collections ------------------------------------------------------------------------

def test_collections_lists_every_contract(api, catalog):
    body = api.get("/collections").json()
    stored_versions = Definition.objects.filter(workspace=catalog, family="collection")
    assert [(c["name"], c["version"]) for c in body["collections"]] == sorted(
        (d.name, d.version) for d in stored_versions)
    by_name = {c["name"]: c for c in body["collections"]}
    assert {"dependencies", "main", "profiles", "tickets"} <= set(by_name)
    tickets = by_name["tickets"]
    stored = Definition.objects.get(workspace=catalog, family="collection", name="tickets", version=1)
    assert tickets == {
        "name": "tickets",
        "version": 1,
        "hash": stored.hash,
        "contract_hash": stored.contract_hash,
        "active": True,
        "mode": "event",
        "schema": {
            "type": "object",
            "required": ["text", "channel"],
            "properties": {
                "text": {"type": "string"},
                "channel": {"type": "string", "enum": ["email", "call", "chat"]},
                "opened_at": {"type": "string", "format": "date-time"},
                "priority": {"type": "integer", "minimum": 1, "maximum": 5},
            },
        },
        "text_projection": None,
        "fields": {
            "channel": {"path": "content.channel", "type": "string", "filter": True, "sort": True, "project": True},
            "opened_at": {"path": "content.opened_at", "type": "datetime", "filter": True, "sort": True,
                          "project": True},
            "priority": {"path": "content.priority", "type": "integer", "filter": True, "sort": True,
                         "project": True},
            "sentiment": {"path": "annotations.sentiment.label", "type": "string", "filter": True, "sort": False,
                          "project": True},
        },
        "required_processors": ["embedding_v1", "sentiment"],
        "optional_processors": ["importance"],
        "search_profile": "pg_default",
        "declared_search_profile": "pg_default",
        "allowed_search_profiles": [],
    }
    assert by_name["main"]["fields"]["tags"] == {"path": "content.tags", "type": ["string"], "filter": True,
                                                 "sort": False, "project": True}
    assert by_name["profiles"]["text_projection"] == "{{title}} starts {{starts_at}}"
    # The contract hash is what records carry.
    assert record_make(catalog, collection="tickets", type="ticket",
                       content={"channel": "chat"}).collection_hash == tickets["contract_hash"]


def test_collections_lists_inactive_versions_beside_active_ones(api, catalog, tmp_path):
    directory = tmp_path / "catalog"
    shutil.copytree(EXAMPLE_CATALOG, directory)
    (directory / "collections" / "main_v2.yaml").write_text(
        (EXAMPLE_CATALOG / "collections" / "main.yaml").read_text()
        .replace("version: 1", "version: 2").replace("active: true", "active: false"))
    catalog_load(workspace=catalog, directory=directory)
    listed = [(c["name"], c["version"], c["active"]) for c in api.get("/collections").json()["collections"]]
    assert listed == sorted(listed, key=lambda item: (item[0], item[1]))
    assert [item for item in listed if item[0] == "main"] == [("main", 1, True), ("main", 2, False)]
    assert len(listed) == Definition.objects.filter(workspace=catalog, family="collection").count()


def test_collections_of_a_workspace_without_a_catalog_is_empty(api, workspace):
    assert api.get("/collections").json() == {"collections": []}


def test_collections_rejects_query_parameters(api, catalog):
    assert error_of(api.get("/collections?name=main")) == (422, "request_schema", "name")


# --- OpenAPI ---------------------------------------------------------------------------------

def test_read_routes_are_documented_in_the_schema(api, catalog):
    response = api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = json.loads(response.content)
    for path in ("/records/{id}", "/timeline", "/document", "/document/history", "/collections"):
        operation = schema["paths"][path]["get"]
        assert {"200", "401", "422"} <= set(operation["responses"]), path
    timeline_params = {p["name"] for p in schema["paths"]["/timeline"]["get"]["parameters"]}
    assert timeline_params == {"entity", "collections", "types", "status", "limit", "before_seq", "include_system"}
    assert {"RecordDereference", "TimelinePage", "Document", "DocumentHistory", "CollectionList",
            "Error"} <= set(schema["components"]["schemas"])
