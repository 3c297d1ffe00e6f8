"""POST /retrieve end to end: the MemoryContext shape (sections always present, every entry's
provenance, bi-temporal, policy, version and trust fields), sections by record kind, receipts
(stored for every call, GET /receipts/{id}, isolated per workspace), touches on read."""
import hashlib
import uuid

import pytest

from catalog_app.models import Record
from catalog_app.services.workspaces import workspace_create
from retrieval_app.models import Receipt
from retrieval_app.request import parse_retrieve_request
from retrieval_app.service import retrieve as retrieve_service
from rest_framework.test import APIClient
from tests.retrieval_app.factories import T0, at, event, fact, ids_of, load, policy, retrieve, summary, write

SECTIONS = ["policies", "facts", "events", "derived"]


@pytest.fixture
def loaded(workspace):
    return load(workspace)


def test_sections_are_always_present_and_empty_when_nothing_matched(loaded, api):
    body = retrieve(api, {"query": "nothing stored matches this"})
    assert list(body["sections"]) == SECTIONS
    assert all(entries == [] for entries in body["sections"].values())
    assert body["compilation"]["totalTokens"] == 0
    assert uuid.UUID(body["receiptId"])
    assert (body["mode"], body["asOf"], body["asOfAxis"]) == ("assisted", None, "valid")
    assert "diagnostics" not in body


def test_a_workspace_without_collections_gets_an_empty_context(workspace, api):
    assert all(not entries for entries in retrieve(api, {"query": "budget"})["sections"].values())


def test_records_land_in_their_sections(loaded, api):
    fact_id, event_id, policy_id = write(loaded, [fact("budget", "budget is 50k"), event("budget meeting held"),
                                                  policy("Budget figures are confidential")])
    (derived_id,) = write(loaded, [summary("budget summary", [event_id])])
    body = retrieve(api, {"query": "budget"})
    assert {name: ids_of(body, name) for name in SECTIONS} == {
        "policies": [policy_id], "facts": [fact_id], "events": [event_id], "derived": [derived_id]}


def test_every_entry_carries_provenance_bitemporal_policy_version_and_trust(loaded, api):
    fact_id, event_id = write(loaded, [
        fact("budget", "budget is 50k", hours=2, dedupe_key="crm:42", visibility="shared", classification="finance",
             confidence=0.9),
        event("budget meeting", hours=1)])
    (derived_id,) = write(loaded, [summary("budget summary", [event_id], hours=3)])
    body = retrieve(api, {"query": "budget"})
    stored = Record.objects.get(pk=fact_id)
    entry = body["sections"]["facts"][0]
    assert set(entry) == {"id", "text", "rendered", "entity", "collection", "type", "key", "score", "tokens",
                          "provenance", "validFrom", "validTo", "recordedAt", "recordedUntil", "policy", "version",
                          "trust"}
    assert (entry["text"], entry["entity"], entry["collection"], entry["type"], entry["key"]) == \
        ("budget is 50k", "maria", "facts", "fact", "budget")
    assert entry["provenance"] == {"sourceKind": "ingested", "sourceRef": "crm:42", "extractionMethod": "client"}
    assert (entry["validFrom"], entry["validTo"]) == (at(2), None)
    assert (entry["recordedAt"], entry["recordedUntil"]) == (stored.created_at.isoformat(), None)
    assert entry["policy"] == {"visibility": "shared", "ownerAgentId": None, "classification": "finance"}
    assert entry["version"] == {"collection": "facts", "collectionVersion": 1, "seq": stored.workspace_seq}
    assert entry["trust"]["ready"] is True and entry["trust"]["depth"] == 0
    assert entry["trust"]["confidence"] == 0.9 and entry["trust"]["corroboration"] >= 1
    assert entry["rendered"].startswith(f"[id={fact_id}] ") and entry["rendered"].endswith("| budget is 50k")
    derived = body["sections"]["derived"][0]
    assert derived["provenance"] == {"sourceKind": "derived", "sourceRef": event_id, "extractionMethod": "derivation"}
    assert derived["trust"]["derived"] is True and derived["trust"]["depth"] == 1
    assert derived["id"] == derived_id
    event_entry = body["sections"]["events"][0]
    assert event_entry["policy"] == {"visibility": "shared", "ownerAgentId": None, "classification": "internal"}


def test_policy_entries_have_no_score_and_collections_without_policy_file_entries_read_shared(loaded, api):
    (policy_id,) = write(loaded, [policy("Never quote prices")])
    entry = retrieve(api, {"query": "prices"})["sections"]["policies"][0]
    assert entry["id"] == policy_id and entry["score"] is None
    assert entry["policy"] == {"visibility": "shared", "ownerAgentId": None, "classification": "platform"}


def test_every_call_stores_a_receipt_naming_exactly_what_was_delivered(loaded, api, workspace):
    write(loaded, [fact("budget", "budget is 50k"), event("budget meeting"), policy("Budget is confidential")])
    body = retrieve(api, {"query": "budget", "tokenBudget": 2000})
    receipt = Receipt.objects.get(pk=body["receiptId"])
    delivered = [(entry["id"], name, entry["tokens"], entry["version"]["seq"])
                 for name in SECTIONS for entry in body["sections"][name]]
    assert [(item["id"], item["section"], item["tokens"], item["seq"]) for item in receipt.items] == delivered
    assert receipt.sections == {name: ids_of(body, name) for name in SECTIONS}
    assert receipt.total_tokens == body["compilation"]["totalTokens"] == sum(item[2] for item in delivered)
    assert (receipt.token_budget, receipt.mode, receipt.raw, receipt.workspace_id) == (2000, "assisted", False,
                                                                                          workspace.pk)
    expected = hashlib.sha256(parse_retrieve_request({"query": "budget", "tokenBudget": 2000}).canonical(2000)
                              .encode()).hexdigest()
    assert receipt.request_hash == expected
    served = api.get(f"/receipts/{receipt.id}").json()
    assert served == {"id": str(receipt.id), "createdAt": receipt.created_at.isoformat(),
                      "requestHash": expected, "mode": "assisted", "raw": False, "tokenBudget": 2000,
                      "totalTokens": receipt.total_tokens, "sections": receipt.sections, "items": receipt.items}
    assert {"collection", "collectionVersion"} <= set(served["items"][0])


def test_an_empty_retrieval_still_stores_a_receipt(loaded, api):
    body = retrieve(api, {"query": "nothing"})
    assert api.get(f"/receipts/{body['receiptId']}").json()["items"] == []


def test_receipts_of_another_workspace_look_missing(loaded, api):
    receipt_id = retrieve(api, {"query": "budget"})["receiptId"]
    other, key = workspace_create(name="other-co")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    response = client.get(f"/receipts/{receipt_id}")
    assert response.status_code == 404
    assert response.json()["error"] == "receipt_not_found"
    missing = api.get(f"/receipts/{uuid.uuid4()}")
    assert (missing.status_code, missing.json()["error"]) == (404, "receipt_not_found")


def test_malformed_receipt_id_and_unknown_parameters(loaded, api):
    response = api.get("/receipts/not-a-uuid")
    assert (response.status_code, response.json()["error"], response.json()["path"]) == (422, "invalid_id", "id")
    receipt_id = retrieve(api, {"query": "budget"})["receiptId"]
    assert api.get(f"/receipts/{receipt_id}?full=1").json()["error"] == "request_schema"


def test_routes_need_a_key(loaded):
    assert APIClient().post("/retrieve", {"query": "q"}, format="json").status_code == 401
    assert APIClient().get(f"/receipts/{uuid.uuid4()}").status_code == 401


def test_delivered_records_are_touched_and_counted_on_read(loaded, api, django_capture_on_commit_callbacks):
    delivered, = write(loaded, [fact("budget", "budget is 50k")])
    assert Record.objects.get(pk=delivered).access_count == 0
    with django_capture_on_commit_callbacks(execute=True):
        retrieve(api, {"query": "budget"})
    with django_capture_on_commit_callbacks(execute=True):
        retrieve(api, {"query": "budget"})
    record = Record.objects.get(pk=delivered)
    assert record.access_count == 2
    assert record.last_accessed > T0


def test_access_frequency_counts_in_the_score(loaded, api):
    often, rarely = write(loaded, [event("budget meeting one"), event("budget meeting two")])
    Record.objects.filter(pk=often).update(access_count=5)
    entries = retrieve(api, {"query": "budget", "explain": True})["sections"]["events"]
    factors = {entry["id"]: entry["explanation"]["factors"]["frequency"]["value"] for entry in entries}
    assert factors == {often: 0.5, rarely: 0.0}


def test_the_service_function_takes_a_parsed_request_or_a_raw_body(loaded):
    write(loaded, [fact("budget", "budget is 50k")])
    by_body = retrieve_service(workspace=loaded, request={"query": "budget"})
    by_request = retrieve_service(workspace=loaded, request=parse_retrieve_request({"query": "budget"}))
    assert ids_of(by_body, "facts") == ids_of(by_request, "facts")
    assert by_body["receiptId"] != by_request["receiptId"]


def test_the_openapi_document_describes_both_routes(db, tmp_path):
    from django.core.management import call_command

    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml"))
    text = (tmp_path / "schema.yaml").read_text()
    for fragment in ("/retrieve:", "/receipts/{id}:", "MemoryContext", "ContextBudgetTooSmall", "requiredTokens"):
        assert fragment in text
