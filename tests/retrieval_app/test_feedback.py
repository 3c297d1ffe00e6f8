"""POST /receipts/{id}/feedback: outcomes stored per receipt, the learned utility they maintain,
value-aware selection driven by it (on only when the workspace enables it), dedupe keys and
every error with its code and path."""
import uuid

import pytest
from rest_framework.test import APIClient

from catalog_app.models import Workspace
from catalog_app.services.workspaces import workspace_create
from retrieval_app.feedback import record_utilities, record_utility_rebuild, utility
from retrieval_app.models import Feedback, RecordUtility
from retrieval_app.service import learned_utility
from tests.retrieval_app.factories import event, fact, ids_of, load, policy, retrieve, write


@pytest.fixture
def loaded(workspace):
    return load(workspace)


def feedback(api, receipt_id, body: dict, status: int = 201) -> dict:
    response = api.post(f"/receipts/{receipt_id}/feedback", body, format="json")
    assert response.status_code == status, response.json()
    return response.json()


def value_aware(workspace, enabled: bool = True, weight: float = 0.2) -> None:
    Workspace.objects.filter(pk=workspace.pk).update(
        settings={"retrieval.valueAware.enabled": enabled, "retrieval.valueAware.weight": weight})


def events_order(api) -> list[str]:
    return ids_of(retrieve(api, {"query": "budget meeting"}), "events")


def test_feedback_is_stored_and_changes_the_learned_utility(loaded, api):
    one, two = write(loaded, [fact("budget", "budget is 50k"), event("budget meeting")])
    receipt_id = retrieve(api, {"query": "budget"})["receiptId"]
    assert learned_utility(workspace=loaded, record_ids=[uuid.UUID(one), uuid.UUID(two)]) == {}
    body = feedback(api, receipt_id, {"outcome": "success", "recordIds": [one], "comment": "used it"})
    assert body["receiptId"] == receipt_id and body["outcome"] == "success" and body["score"] == 1.0
    assert (body["recordIds"], body["comment"], body["dedupeKey"], body["deduplicated"]) == ([one], "used it", None,
                                                                                             False)
    stored = Feedback.objects.get(pk=body["id"])
    assert (stored.workspace_id, str(stored.receipt_id), stored.record_ids) == (loaded.pk, receipt_id, [one])
    assert learned_utility(workspace=loaded, record_ids=[uuid.UUID(one), uuid.UUID(two)]) == \
        {uuid.UUID(one): pytest.approx(2 / 3)}
    feedback(api, receipt_id, {"outcome": "failure", "recordIds": [one]})
    assert record_utilities(workspace=loaded, record_ids=[one])[uuid.UUID(one)] == pytest.approx(0.5)
    feedback(api, receipt_id, {"outcome": "partial", "score": 0.8, "recordIds": [one, two]})
    row = RecordUtility.objects.get(record_id=one)
    assert (row.n, row.total) == (3, pytest.approx(1.8))
    assert record_utilities(workspace=loaded, record_ids=[one, two]) == {
        uuid.UUID(one): pytest.approx(2.8 / 5), uuid.UUID(two): pytest.approx(1.8 / 3)}


@pytest.mark.parametrize("outcome, score", [("success", 1.0), ("partial", 0.5), ("failure", 0.0),
                                            ("irrelevant", 0.0)])
def test_each_outcome_has_a_default_score(loaded, api, outcome, score):
    write(loaded, [event("budget meeting")])
    receipt_id = retrieve(api, {"query": "budget"})["receiptId"]
    assert feedback(api, receipt_id, {"outcome": outcome})["score"] == score


def test_record_ids_default_to_every_delivered_record(loaded, api):
    fact_id, event_id, policy_id = write(loaded, [fact("budget", "budget is 50k"), event("budget meeting"),
                                                  policy("Budget figures are confidential")])
    payload = retrieve(api, {"query": "budget"})
    delivered = [entry["id"] for entries in payload["sections"].values() for entry in entries]
    assert set(delivered) == {fact_id, event_id, policy_id}
    body = feedback(api, payload["receiptId"], {"outcome": "partial"})
    assert body["recordIds"] == delivered
    assert RecordUtility.objects.filter(workspace=loaded).count() == 3


def test_feedback_on_an_empty_receipt_is_stored_and_touches_no_utility(loaded, api):
    receipt_id = retrieve(api, {"query": "nothing stored"})["receiptId"]
    assert feedback(api, receipt_id, {"outcome": "irrelevant"})["recordIds"] == []
    assert not RecordUtility.objects.exists()


def test_with_value_aware_on_good_feedback_lets_a_record_overtake_an_otherwise_equal_one(loaded, api):
    first, second = write(loaded, [event("budget meeting"), event("budget meeting")])
    before = events_order(api)
    assert sorted(before) == sorted([first, second])
    leader, runner_up = before
    value_aware(loaded)
    assert events_order(api) == before  # no feedback yet: both carry the neutral prior
    receipt_id = retrieve(api, {"query": "budget meeting"})["receiptId"]
    feedback(api, receipt_id, {"outcome": "success", "recordIds": [runner_up]})
    payload = retrieve(api, {"query": "budget meeting", "explain": True})
    assert ids_of(payload, "events") == [runner_up, leader]
    explained = {entry["id"]: entry["explanation"]["valueAware"] for entry in payload["sections"]["events"]}
    assert explained[runner_up]["utility"] == pytest.approx(2 / 3)
    assert explained[leader] == {"enabled": True, "utility": 0.5, "baseScore": explained[leader]["baseScore"]}
    assert explained[leader]["baseScore"] > explained[runner_up]["baseScore"]


def test_bad_feedback_sinks_a_leader_when_value_aware_is_on(loaded, api):
    write(loaded, [event("budget meeting"), event("budget meeting")])
    leader, runner_up = events_order(api)
    value_aware(loaded, weight=0.5)
    receipt_id = retrieve(api, {"query": "budget meeting"})["receiptId"]
    feedback(api, receipt_id, {"outcome": "failure", "recordIds": [leader]})
    assert events_order(api) == [runner_up, leader]


def test_value_aware_selection_is_off_by_default_so_feedback_changes_nothing(loaded, api):
    write(loaded, [event("budget meeting"), event("budget meeting")])
    before = retrieve(api, {"query": "budget meeting", "explain": True})["sections"]["events"]
    leader, runner_up = [entry["id"] for entry in before]
    for _ in range(3):
        receipt_id = retrieve(api, {"query": "budget meeting"})["receiptId"]
        feedback(api, receipt_id, {"outcome": "success", "recordIds": [runner_up]})
        feedback(api, receipt_id, {"outcome": "failure", "recordIds": [leader]})
    assert RecordUtility.objects.count() == 2
    after = retrieve(api, {"query": "budget meeting", "explain": True})["sections"]["events"]
    assert [entry["id"] for entry in after] == [leader, runner_up]
    assert all(entry["explanation"]["valueAware"] == {"enabled": False} for entry in after)
    # The touches the retrievals enqueue run on commit, which never comes inside the test's
    # transaction, so nothing but feedback could have moved the scores.
    assert [entry["score"] for entry in after] == [entry["score"] for entry in before]


def test_a_repeated_dedupe_key_with_the_same_payload_is_idempotent(loaded, api):
    (record_id,) = write(loaded, [event("budget meeting")])
    receipt_id = retrieve(api, {"query": "budget"})["receiptId"]
    first = feedback(api, receipt_id, {"outcome": "success", "dedupeKey": "run-1"})
    again = feedback(api, receipt_id, {"outcome": "success", "dedupeKey": "run-1"}, status=200)
    # The same effective payload: defaults applied, record ids as a set.
    spelled_out = feedback(api, receipt_id, {"outcome": "success", "score": 1, "recordIds": [record_id],
                                             "dedupeKey": "run-1"}, status=200)
    assert again == spelled_out == {**first, "deduplicated": True}
    assert Feedback.objects.count() == 1
    assert RecordUtility.objects.get(record_id=record_id).n == 1


def test_a_repeated_dedupe_key_with_another_payload_is_a_conflict(loaded, api):
    write(loaded, [event("budget meeting")])
    receipt_id = retrieve(api, {"query": "budget"})["receiptId"]
    first = feedback(api, receipt_id, {"outcome": "success", "dedupeKey": "run-1"})
    for changed in ({"outcome": "partial"}, {"outcome": "success", "score": 0.9},
                    {"outcome": "success", "comment": "other"}):
        body = feedback(api, receipt_id, {**changed, "dedupeKey": "run-1"}, status=409)
        assert (body["error"], body["path"], body["feedbackId"]) == ("dedupe_conflict", "dedupeKey", first["id"])
    assert Feedback.objects.count() == 1 and RecordUtility.objects.get().n == 1


def test_dedupe_keys_are_scoped_to_their_receipt(loaded, api):
    write(loaded, [event("budget meeting")])
    one = retrieve(api, {"query": "budget"})["receiptId"]
    two = retrieve(api, {"query": "budget"})["receiptId"]
    feedback(api, one, {"outcome": "success", "dedupeKey": "run-1"})
    feedback(api, two, {"outcome": "failure", "dedupeKey": "run-1"})
    assert RecordUtility.objects.get().n == 2


def test_rebuilding_the_utility_from_feedback_rows_gives_the_maintained_values(loaded, api):
    one, two = write(loaded, [event("budget meeting"), event("budget review")])
    receipt_id = retrieve(api, {"query": "budget"})["receiptId"]
    feedback(api, receipt_id, {"outcome": "success"})
    feedback(api, receipt_id, {"outcome": "partial", "score": 0.25, "recordIds": [two]})
    maintained = record_utilities(workspace=loaded, record_ids=[one, two])
    RecordUtility.objects.all().update(n=99, total=0)
    assert record_utility_rebuild(workspace=loaded) == 2
    assert record_utilities(workspace=loaded, record_ids=[one, two]) == pytest.approx(maintained)
    assert maintained[uuid.UUID(two)] == pytest.approx(utility(2, 1.25))


@pytest.mark.parametrize("body, path", [
    ({}, "outcome"),
    ({"outcome": "great"}, "outcome"),
    ({"outcome": {}}, "outcome"),
    ({"outcome": ["success"]}, "outcome"),
    ({"outcome": 1}, "outcome"),
    ({"outcome": "success", "score": 1.5}, "score"),
    ({"outcome": "success", "score": -0.1}, "score"),
    ({"outcome": "success", "score": True}, "score"),
    ({"outcome": "success", "score": "1"}, "score"),
    ({"outcome": "success", "recordIds": []}, "recordIds"),
    ({"outcome": "success", "recordIds": "all"}, "recordIds"),
    ({"outcome": "success", "recordIds": ["not-a-uuid"]}, "recordIds[0]"),
    ({"outcome": "success", "comment": "x" * 2001}, "comment"),
    ({"outcome": "success", "comment": 3}, "comment"),
    ({"outcome": "success", "dedupeKey": "k" * 201}, "dedupeKey"),
    ({"outcome": "success", "dedupeKey": " "}, "dedupeKey"),
    ({"outcome": "success", "records": []}, "records"),
])
def test_invalid_bodies_are_422_with_their_path(loaded, api, body, path):
    write(loaded, [event("budget meeting")])
    receipt_id = retrieve(api, {"query": "budget"})["receiptId"]
    error = feedback(api, receipt_id, body, status=422)
    assert (error["error"], error["path"]) == ("request_schema", path)
    assert not Feedback.objects.exists()


def test_repeated_record_ids_are_refused(loaded, api):
    (record_id,) = write(loaded, [event("budget meeting")])
    receipt_id = retrieve(api, {"query": "budget"})["receiptId"]
    error = feedback(api, receipt_id, {"outcome": "success", "recordIds": [record_id, record_id]}, status=422)
    assert (error["error"], error["path"]) == ("request_schema", "recordIds[1]")


def test_ids_the_receipt_did_not_deliver_are_refused_with_their_path(loaded, api):
    delivered, held_back = write(loaded, [event("budget meeting"), event("renewal call", entity="otto")])
    receipt_id = retrieve(api, {"query": "budget"})["receiptId"]
    for missing in (held_back, str(uuid.uuid4())):
        error = feedback(api, receipt_id, {"outcome": "success", "recordIds": [delivered, missing]}, status=422)
        assert (error["error"], error["path"]) == ("record_not_in_receipt", "recordIds[1]")
        assert missing in error["detail"]
    assert not Feedback.objects.exists() and not RecordUtility.objects.exists()


def test_unknown_foreign_and_malformed_receipts(loaded, api):
    receipt_id = retrieve(api, {"query": "budget"})["receiptId"]
    missing = feedback(api, uuid.uuid4(), {"outcome": "success"}, status=404)
    assert (missing["error"], missing["path"]) == ("receipt_not_found", "id")
    _, key = workspace_create(name="other-co")
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    foreign = feedback(other, receipt_id, {"outcome": "success"}, status=404)
    assert foreign["error"] == "receipt_not_found"
    malformed = feedback(api, "not-a-uuid", {"outcome": "success"}, status=422)
    assert (malformed["error"], malformed["path"]) == ("invalid_id", "id")
    assert APIClient().post(f"/receipts/{receipt_id}/feedback", {"outcome": "success"},
                            format="json").status_code == 401
    assert api.get(f"/receipts/{receipt_id}/feedback").status_code == 405
    assert not Feedback.objects.exists()
