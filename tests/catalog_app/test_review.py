"""Draft review: draft_approve / draft_reject (services and routes) and the draft_slots
selector. Every refusal must leave the record table (and the review audit) unchanged."""
import uuid

import pytest

from catalog_app.models import Record, ReviewAudit, Workspace
from catalog_app.selectors import document_get
from catalog_app.selectors_review import content_changes, draft_slots, text_diff
from catalog_app.services.record_ingest import record_ingest_batch
from catalog_app.services.review import draft_approve, draft_reject, is_withdrawal
from memseek_site.errors import ApiError

MARIA = "contact.maria"


def write(workspace, **fields) -> Record:
    """Write one record through ingest (every write-side rule) and return it."""
    item = {"entity": MARIA, "collection": "main", "type": "fact", "key": "role", **fields}
    result = record_ingest_batch(workspace=workspace, items=[item])
    return Record.objects.get(pk=result.inserted[0].id)


def draft(workspace, text="Maria is the CEO.", **fields) -> Record:
    return write(workspace, status="draft", text=text, **fields)


def active(workspace, text="Maria is the CFO.", **fields) -> Record:
    return write(workspace, text=text, **fields)


def retract_draft(workspace, cited: Record, **fields) -> Record:
    return write(workspace, status="draft", tombstone=True, derived_from=[str(cited.id)], **fields)


def error_of(call) -> tuple:
    with pytest.raises(ApiError) as raised:
        call()
    return raised.value.status, raised.value.code


def state(workspace) -> tuple:
    return Record.objects.filter(workspace=workspace).count(), ReviewAudit.objects.count()


# --- draft_approve ---------------------------------------------------------------------------

def test_approve_writes_the_active_successor_and_leaves_the_draft(catalog):
    current = active(catalog, content={"speaker": "maria"})
    proposal = draft(catalog, content={"speaker": "maria", "tags": ["exec"]}, scores={"importance": 7},
                     occurred_at="2026-03-01T09:00:00+00:00")

    record = draft_approve(workspace=catalog, draft_id=proposal.id, actor="alice")

    assert record.status == "active" and not record.tombstone
    assert (record.entity, record.collection, record.collection_version, record.type, record.key) == \
        (MARIA, "main", 1, "fact", "role")
    assert record.text == "Maria is the CEO."
    assert record.content == {"speaker": "maria", "tags": ["exec"], "text": "Maria is the CEO."}
    assert record.scores == {"importance": 7.0}
    assert record.occurred_at == proposal.occurred_at
    assert record.derived_from == sorted([proposal.id, current.id])  # stored sorted, as the reference does
    assert record.seq > proposal.seq
    # The active head it replaces keeps its depth (continuity); the draft, another lane, adds one.
    assert record.depth == 1
    unchanged = Record.objects.get(pk=proposal.id)
    assert (unchanged.status, unchanged.text, unchanged.derived_from) == ("draft", proposal.text, [])
    beliefs = document_get(workspace=catalog, entity=MARIA, collections=None, status="active")["beliefs"]
    assert [(b["id"], b["text"]) for b in beliefs] == [(str(record.id), "Maria is the CEO.")]
    audit = ReviewAudit.objects.get()
    assert (audit.action, audit.draft_id, audit.record_id, audit.actor) == ("approve", proposal.id, record.id, "alice")


def test_approve_without_an_active_value_cites_only_the_draft(catalog):
    proposal = draft(catalog)
    record = draft_approve(workspace=catalog, draft_id=proposal.id, actor="alice")
    assert record.derived_from == [proposal.id]
    assert record.depth == 1


def test_approve_does_not_copy_server_processor_outputs(catalog):
    proposal = draft(catalog)
    # As if enrichment had written a server-side annotation on the draft.
    Record.objects.filter(pk=proposal.id).update(annotations={"embedding_v1": {"dims": 384}})
    record = draft_approve(workspace=catalog, draft_id=proposal.id, actor="alice")
    assert record.annotations == {}
    assert record.scores == {}
    assert record.ready is False  # the successor is enriched on its own


def test_approving_a_retraction_proposal_writes_an_active_tombstone(catalog):
    current = active(catalog)
    proposal = retract_draft(catalog, current)
    assert not is_withdrawal(proposal)

    record = draft_approve(workspace=catalog, draft_id=proposal.id, actor="alice")

    assert (record.status, record.tombstone, record.key, record.text) == ("active", True, "role", "")
    assert record.derived_from == sorted([proposal.id, current.id])  # stored sorted, as the reference does
    document = document_get(workspace=catalog, entity=MARIA, collections=None, status="active")
    assert document["beliefs"] == []
    assert [r["id"] for r in document["retractions"]] == [str(record.id)]


def test_approve_refusals(catalog, other_workspace_api):
    other = Workspace.objects.get(name="other-co")
    foreign = write(other, status="draft", text="elsewhere")
    live = active(catalog)
    event_draft = write(catalog, key=None, type="event", status="draft", text="Maria called.")
    before = state(catalog)
    cases = [
        (uuid.uuid4(), (404, "record_not_found")),
        (foreign.id, (404, "record_not_found")),
        (live.id, (409, "not_a_draft")),
        (event_draft.id, (409, "draft_not_keyed")),
    ]
    for record_id, expected in cases:
        assert error_of(lambda: draft_approve(workspace=catalog, draft_id=record_id, actor="a")) == expected
        assert error_of(lambda: draft_reject(workspace=catalog, draft_id=record_id, actor="a")) == expected
    assert state(catalog) == before


def test_approve_is_stale_once_the_active_value_moved(catalog):
    active(catalog)
    proposal = draft(catalog)
    newer_active = active(catalog, text="Maria is the COO.")
    before = state(catalog)
    with pytest.raises(ApiError) as raised:
        draft_approve(workspace=catalog, draft_id=proposal.id, actor="a")
    assert (raised.value.status, raised.value.code) == (409, "promotion_stale")
    assert raised.value.envelope()["active_id"] == str(newer_active.id)
    assert state(catalog) == before


def test_approving_twice_is_stale(catalog):
    proposal = draft(catalog)
    draft_approve(workspace=catalog, draft_id=proposal.id, actor="a")
    before = state(catalog)
    assert error_of(lambda: draft_approve(workspace=catalog, draft_id=proposal.id, actor="a")) == \
        (409, "promotion_stale")
    assert state(catalog) == before


def test_an_older_draft_is_stale_for_approve_and_reject(catalog):
    older = draft(catalog, text="Maria is the CTO.")
    newer = draft(catalog)
    before = state(catalog)
    with pytest.raises(ApiError) as raised:
        draft_approve(workspace=catalog, draft_id=older.id, actor="a")
    assert raised.value.code == "promotion_stale"
    assert raised.value.envelope()["current_draft_id"] == str(newer.id)
    assert error_of(lambda: draft_reject(workspace=catalog, draft_id=older.id, actor="a")) == (409, "promotion_stale")
    assert state(catalog) == before


def test_a_retraction_proposal_with_nothing_live_is_refused(catalog):
    current = active(catalog)
    retraction = write(catalog, tombstone=True, derived_from=[str(current.id)])  # already retracted
    proposal = retract_draft(catalog, retraction)
    before = state(catalog)
    assert error_of(lambda: draft_approve(workspace=catalog, draft_id=proposal.id, actor="a")) == \
        (409, "nothing_to_retract")
    assert state(catalog) == before


def test_write_side_rules_apply_to_the_successor(catalog):
    # A draft at MAX_DERIVATION_DEPTH (4): its successor would be at depth 5.
    parent = write(catalog, key=None, type="event", text="step 0")
    for step in range(1, 4):
        parent = write(catalog, key=None, type="event", text=f"step {step}", derived_from=[str(parent.id)])
    proposal = draft(catalog, derived_from=[str(parent.id)])
    assert proposal.depth == 4
    before = state(catalog)
    with pytest.raises(ApiError) as raised:
        draft_approve(workspace=catalog, draft_id=proposal.id, actor="a")
    assert (raised.value.status, raised.value.code) == (422, "depth_limit")
    assert not raised.value.detail.startswith("records[0]")
    assert state(catalog) == before


# --- draft_reject ----------------------------------------------------------------------------

def test_reject_writes_a_withdrawal_and_closes_the_slot(catalog):
    current = active(catalog)
    proposal = draft(catalog)

    withdrawal = draft_reject(workspace=catalog, draft_id=proposal.id, actor="bob")

    assert (withdrawal.status, withdrawal.tombstone, withdrawal.key, withdrawal.collection) == \
        ("draft", True, "role", "main")
    assert withdrawal.derived_from == [proposal.id]
    assert is_withdrawal(withdrawal)
    assert Record.objects.get(pk=current.id).status == "active"  # the active value is untouched
    assert Record.objects.filter(workspace=catalog, status="active").count() == 1
    audit = ReviewAudit.objects.get()
    assert (audit.action, audit.draft_id, audit.record_id, audit.actor) == ("reject", proposal.id, withdrawal.id,
                                                                          "bob")
    before = state(catalog)
    assert error_of(lambda: draft_approve(workspace=catalog, draft_id=proposal.id, actor="a")) == \
        (409, "promotion_stale")
    assert error_of(lambda: draft_reject(workspace=catalog, draft_id=proposal.id, actor="a")) == \
        (409, "promotion_stale")
    assert error_of(lambda: draft_approve(workspace=catalog, draft_id=withdrawal.id, actor="a")) == \
        (409, "not_a_draft")
    assert error_of(lambda: draft_reject(workspace=catalog, draft_id=withdrawal.id, actor="a")) == \
        (409, "not_a_draft")
    assert state(catalog) == before


def test_a_new_draft_after_a_rejection_is_reviewable(catalog):
    draft_reject(workspace=catalog, draft_id=draft(catalog).id, actor="bob")
    again = draft(catalog, text="Maria is the CEO, really.")
    record = draft_approve(workspace=catalog, draft_id=again.id, actor="alice")
    assert record.text == "Maria is the CEO, really."


def test_rejecting_a_retraction_proposal_withdraws_it(catalog):
    current = active(catalog)
    proposal = retract_draft(catalog, current)
    withdrawal = draft_reject(workspace=catalog, draft_id=proposal.id, actor="bob")
    assert is_withdrawal(withdrawal)
    assert Record.objects.filter(workspace=catalog, status="active", tombstone=True).count() == 0


# --- Routes ----------------------------------------------------------------------------------

def test_approve_route(api, catalog):
    current = active(catalog)
    proposal = draft(catalog)
    response = api.post(f"/records/{proposal.id}/approve")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["draft_id"] == str(proposal.id)
    record = body["record"]
    assert record["status"] == "active"
    assert record["derived_from"] == sorted([str(proposal.id), str(current.id)])
    assert {"id", "seq", "entity", "collection", "collection_version", "key", "type", "text", "content", "tombstone",
            "ready", "depth", "occurred_at", "created_at"} <= set(record)
    assert ReviewAudit.objects.get().actor == "api:acme"


def test_reject_route_with_an_empty_object_body(api, catalog):
    proposal = draft(catalog)
    response = api.post(f"/records/{proposal.id}/reject", {}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["record"]["status"] == "draft"
    assert response.json()["record"]["tombstone"] is True
    assert response.json()["record"]["derived_from"] == [str(proposal.id)]


@pytest.mark.parametrize("action", ["approve", "reject"])
def test_route_refusals_write_nothing(api, catalog, action):
    proposal = draft(catalog)
    live = active(catalog, key="title")
    event_draft = write(catalog, key=None, type="event", status="draft", text="Maria called.")
    before = state(catalog)
    cases = [
        (f"/records/not-a-uuid/{action}", None, 422, "invalid_id", "id"),
        (f"/records/{proposal.id}/{action}", {"reason": "x"}, 422, "request_schema", "reason"),
        (f"/records/{proposal.id}/{action}", [], 422, "request_schema", None),
        (f"/records/{proposal.id}/{action}?force=true", None, 422, "request_schema", "force"),
        (f"/records/{uuid.uuid4()}/{action}", None, 404, "record_not_found", "id"),
        (f"/records/{live.id}/{action}", None, 409, "not_a_draft", "id"),
        (f"/records/{event_draft.id}/{action}", None, 409, "draft_not_keyed", "id"),
    ]
    for url, body, status, code, path in cases:
        response = api.post(url, body, format="json") if body is not None else api.post(url)
        envelope = response.json()
        assert (response.status_code, envelope["error"], envelope.get("path")) == (status, code, path), url
    assert state(catalog) == before


def test_route_stale(api, catalog):
    older = draft(catalog, text="Maria is the CTO.")
    draft(catalog)
    response = api.post(f"/records/{older.id}/approve")
    assert response.status_code == 409
    assert response.json()["error"] == "promotion_stale"


def test_routes_need_the_bearer_key(catalog, client):
    proposal = draft(catalog)
    response = client.post(f"/records/{proposal.id}/approve")
    assert (response.status_code, response.json()["error"]) == (401, "unauthorized")


def test_another_workspace_cannot_review(catalog, other_workspace_api):
    proposal = draft(catalog)
    response = other_workspace_api.post(f"/records/{proposal.id}/approve")
    assert (response.status_code, response.json()["error"]) == (404, "record_not_found")


def test_review_routes_are_documented(api, catalog):
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    for action in ("approve", "reject"):
        operation = schema["paths"][f"/records/{{id}}/{action}"]["post"]
        assert {"200", "401", "404", "409", "422"} <= set(operation["responses"])
    assert {"ReviewResult", "ReviewRecord"} <= set(schema["components"]["schemas"])


# --- draft_slots -----------------------------------------------------------------------------

def test_draft_slots_pair_each_pending_draft_with_the_active_value(catalog, django_assert_max_num_queries):
    active(catalog, content={"speaker": "maria", "tags": ["finance"]})
    role = draft(catalog, content={"speaker": "maria", "tags": ["exec"]})
    fresh = draft(catalog, key="city", text="Maria lives in Lyon.")
    draft_reject(workspace=catalog, draft_id=draft(catalog, key="nickname", text="Mimi").id, actor="bob")
    phone = active(catalog, key="phone", text="Maria: 555-0100")
    retraction = retract_draft(catalog, phone, key="phone")
    write(catalog, key=None, type="event", status="draft", text="an event draft is not a slot")
    write(catalog, key="title", text="active only, no draft")
    ahmed = draft(catalog, entity="contact.ahmed", text="Ahmed is the CTO.")
    unready_stale = draft(catalog, entity="contact.zoe", text="Zoe is in sales.")
    zoe_now = active(catalog, entity="contact.zoe", text="Zoe is in marketing.")

    with django_assert_max_num_queries(3):
        page = draft_slots(workspace=catalog)

    assert [group["entity"] for group in page["entities"]] == ["contact.ahmed", MARIA, "contact.zoe"]
    slots = {(slot["entity"], slot["key"]): slot for group in page["entities"] for slot in group["slots"]}
    assert list(slots) == [("contact.ahmed", "role"), (MARIA, "city"), (MARIA, "phone"), (MARIA, "role"),
                           ("contact.zoe", "role")]
    assert (page["page"], page["per_page"], page["has_previous"], page["has_next"]) == (1, 25, False, False)

    maria_role = slots[(MARIA, "role")]
    assert maria_role["draft"]["id"] == str(role.id)
    assert maria_role["active"]["text"] == "Maria is the CFO."
    assert (maria_role["proposal"], maria_role["stale"]) == ("value", False)
    assert "-Maria is the CFO." in maria_role["diff"]["text"] and "+Maria is the CEO." in maria_role["diff"]["text"]
    assert maria_role["diff"]["content"] == [{"key": "tags", "change": "changed", "active": ["finance"],
                                              "draft": ["exec"]}]
    assert slots[(MARIA, "city")]["active"] is None
    assert slots[(MARIA, "city")]["draft"]["id"] == str(fresh.id)
    assert slots[(MARIA, "city")]["diff"]["text"].endswith("+Maria lives in Lyon.")
    assert slots[(MARIA, "phone")]["proposal"] == "retraction"
    assert slots[(MARIA, "phone")]["draft"]["id"] == str(retraction.id)
    assert "-Maria: 555-0100" in slots[(MARIA, "phone")]["diff"]["text"]
    assert slots[("contact.ahmed", "role")]["draft"]["id"] == str(ahmed.id)
    zoe = slots[("contact.zoe", "role")]
    assert (zoe["draft"]["id"], zoe["active"]["id"], zoe["stale"]) == (str(unready_stale.id), str(zoe_now.id), True)
    assert zoe["draft"]["ready"] is False


def test_draft_slots_filter_by_entity_and_paginate(catalog):
    for key in ("a", "b", "c"):
        draft(catalog, key=key)
    draft(catalog, entity="contact.ahmed")
    first = draft_slots(workspace=catalog, entity=MARIA, per_page=2)
    assert [s["key"] for g in first["entities"] for s in g["slots"]] == ["a", "b"]
    assert (first["has_previous"], first["has_next"]) == (False, True)
    second = draft_slots(workspace=catalog, entity=MARIA, page=2, per_page=2)
    assert [s["key"] for g in second["entities"] for s in g["slots"]] == ["c"]
    assert (second["has_previous"], second["has_next"]) == (True, False)
    assert draft_slots(workspace=catalog, entity="nobody")["entities"] == []


@pytest.mark.parametrize(("kwargs", "path"), [({"page": 0}, "page"), ({"per_page": 0}, "per_page"),
                                              ({"per_page": 101}, "per_page"), ({"page": "2"}, "page")])
def test_draft_slots_bounds(catalog, kwargs, path):
    with pytest.raises(ApiError) as raised:
        draft_slots(workspace=catalog, **kwargs)
    assert (raised.value.code, raised.value.path) == ("request_schema", path)


def test_diff_helpers():
    assert text_diff("same", "same") == ""
    assert text_diff("", "new").splitlines()[-1] == "+new"
    assert content_changes({"text": "a", "x": 1, "gone": 2}, {"text": "b", "x": 1, "new": 3}) == [
        {"key": "gone", "change": "removed", "active": 2, "draft": None},
        {"key": "new", "change": "added", "active": None, "draft": 3},
    ]


def test_an_approved_draft_leaves_the_pending_list_and_a_later_draft_joins_it(catalog):
    active(catalog)
    proposal = draft(catalog)
    listed = [slot["draft"]["id"] for group in draft_slots(workspace=catalog)["entities"] for slot in group["slots"]]
    assert listed == [str(proposal.id)]
    draft_approve(workspace=catalog, draft_id=proposal.id, actor="alice")
    assert draft_slots(workspace=catalog)["entities"] == []
    newer = draft(catalog, text="Maria is the COO.")
    listed = [slot["draft"]["id"] for group in draft_slots(workspace=catalog)["entities"] for slot in group["slots"]]
    assert listed == [str(newer.id)]
