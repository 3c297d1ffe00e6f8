"""Superseded and historical memories: hidden on every path by default, ``includeSuperseded``
with ``supersededAt``/``supersededBy``, the ``retrieval.hideSuperseded`` setting, and ``asOf``
on the valid axis (occurred_at; supersession by a later occurred_at) and the transaction axis
(created_at; supersession by a later write), on a fact corrected twice."""
from datetime import timedelta

import pytest

from catalog_app.models import Record, Workspace
from tests.retrieval_app.factories import (T0, all_ids, at, event, fact, ids_of, link, load, retrieve, set_created,
                                           summary, write)

# valid time (occurred_at) and transaction time (created_at) of each value, in hours after T0
VALID = {"v1": 0, "v2": 24, "v3": 48}
RECORDED = {"v1": 5, "v2": 40, "v3": 60}


@pytest.fixture
def corrected(workspace):
    """One fact (maria/budget) written three times: 40k, then 45k, then 50k."""
    load(workspace)
    ids = {}
    for name, amount in (("v1", "40k"), ("v2", "45k"), ("v3", "50k")):
        (ids[name],) = write(workspace, [fact("budget", f"budget is {amount}", hours=VALID[name])])
        set_created(ids[name], RECORDED[name])
    return ids


def facts(api, **body):
    return retrieve(api, {"query": "budget", **body})["sections"]["facts"]


def test_only_the_current_value_is_returned_by_default(corrected, api):
    (entry,) = facts(api)
    assert entry["id"] == corrected["v3"]
    assert "supersededAt" not in entry and "supersededBy" not in entry


def test_exclude_superseded_is_ignored(corrected, api):
    assert [e["id"] for e in facts(api, excludeSuperseded=False)] == [corrected["v3"]]


def test_include_superseded_returns_the_history_with_its_successors(corrected, api):
    by_id = {entry["id"]: entry for entry in facts(api, includeSuperseded=True, explain=True)}
    assert set(by_id) == set(corrected.values())
    v1, v2, v3 = (by_id[corrected[name]] for name in ("v1", "v2", "v3"))
    assert (v1["supersededBy"], v1["supersededAt"]) == (corrected["v2"], at(VALID["v2"]))
    assert (v2["supersededBy"], v2["supersededAt"]) == (corrected["v3"], at(VALID["v3"]))
    assert (v3["supersededBy"], v3["supersededAt"]) == (None, None)
    assert (v1["validFrom"], v1["validTo"]) == (at(VALID["v1"]), at(VALID["v2"]))
    assert (v1["recordedAt"], v1["recordedUntil"]) == (at(RECORDED["v1"]), at(RECORDED["v2"]))
    assert (v3["validTo"], v3["recordedUntil"]) == (None, None)


def test_include_superseded_on_the_transaction_axis_reports_transaction_times(corrected, api):
    by_id = {e["id"]: e for e in facts(api, includeSuperseded=True, asOfAxis="transaction")}
    assert (by_id[corrected["v1"]]["supersededBy"], by_id[corrected["v1"]]["supersededAt"]) == \
        (corrected["v2"], at(RECORDED["v2"]))


def test_the_workspace_can_switch_hiding_off(corrected, api, workspace):
    Workspace.objects.filter(pk=workspace.pk).update(settings={"retrieval.hideSuperseded": False})
    entries = facts(api)
    assert {e["id"] for e in entries} == set(corrected.values())
    assert all("supersededBy" in e for e in entries)


@pytest.mark.parametrize(("hours", "expected"), [(-1, None), (0, "v1"), (12, "v1"), (24, "v2"), (30, "v2"),
                                                 (47, "v2"), (48, "v3"), (500, "v3")])
def test_as_of_on_the_valid_axis(corrected, api, hours, expected):
    entries = facts(api, asOf=at(hours))
    assert [e["id"] for e in entries] == ([corrected[expected]] if expected else [])
    if expected == "v1":  # what was true then, with what is known now about when it stopped
        assert (entries[0]["validFrom"], entries[0]["validTo"]) == (at(VALID["v1"]), at(VALID["v2"]))


@pytest.mark.parametrize(("hours", "expected"), [(1, None), (5, "v1"), (30, "v1"), (39, "v1"), (40, "v2"),
                                                 (59, "v2"), (60, "v3"), (500, "v3")])
def test_as_of_on_the_transaction_axis(corrected, api, hours, expected):
    entries = facts(api, asOf=at(hours), asOfAxis="transaction")
    assert [e["id"] for e in entries] == ([corrected[expected]] if expected else [])
    if expected == "v1":  # what the system knew then: no successor yet
        assert entries[0]["recordedUntil"] is None


def test_the_axes_disagree_between_a_change_in_the_world_and_its_recording(corrected, api):
    # At hour 30 the 45k value was already true (valid since 24) but not yet recorded (at 40).
    assert [e["id"] for e in facts(api, asOf=at(30))] == [corrected["v2"]]
    assert [e["id"] for e in facts(api, asOf=at(30), asOfAxis="transaction")] == [corrected["v1"]]


def test_as_of_with_include_superseded_shows_the_slice_history(corrected, api):
    by_id = {e["id"]: e for e in facts(api, asOf=at(30), includeSuperseded=True)}
    assert set(by_id) == {corrected["v1"], corrected["v2"]}
    assert by_id[corrected["v1"]]["supersededBy"] == corrected["v2"]
    assert by_id[corrected["v2"]]["supersededBy"] is None  # v3 lies outside the slice
    by_id = {e["id"]: e for e in facts(api, asOf=at(45), asOfAxis="transaction", includeSuperseded=True)}
    assert set(by_id) == {corrected["v1"], corrected["v2"]}
    assert by_id[corrected["v2"]]["recordedUntil"] is None


def test_a_backdated_correction_supersedes_by_valid_time_not_by_write_order(corrected, api):
    (late,) = write(Workspace.objects.get(), [fact("budget", "budget is 47k", hours=36)])
    set_created(late, 80)
    assert [e["id"] for e in facts(api)] == [corrected["v3"]]  # 50k is still the latest truth
    assert [e["id"] for e in facts(api, asOf=at(40))] == [late]
    assert [e["id"] for e in facts(api, asOfAxis="transaction")] == [late]  # the newest write
    assert [e["id"] for e in facts(api, asOf=at(70), asOfAxis="transaction")] == [corrected["v3"]]


def test_events_are_sliced_by_time_on_either_axis(workspace, api):
    load(workspace)
    early, later = write(workspace, [event("budget kickoff", hours=1), event("budget signoff", hours=10)])
    set_created(early, 2)
    set_created(later, 3)
    events = lambda **body: ids_of(retrieve(api, {"query": "budget", **body}), "events")  # noqa: E731
    assert events(asOf=at(5)) == [early]
    assert sorted(events(asOf=at(5), asOfAxis="transaction")) == sorted([early, later])
    assert events(asOf=at(2), asOfAxis="transaction") == [early]


def test_a_retraction_hides_the_value_and_shows_as_its_successor(corrected, api):
    (tombstone,) = write(Workspace.objects.get(), [{"entity": "maria", "collection": "facts", "type": "fact",
                                                    "key": "budget", "tombstone": True,
                                                    "derived_from": [corrected["v3"]], "occurred_at": at(72)}])
    assert facts(api) == []
    by_id = {e["id"]: e for e in facts(api, includeSuperseded=True)}
    assert by_id[corrected["v3"]]["supersededBy"] == tombstone
    assert tombstone not in by_id  # a tombstone is never delivered


def test_superseded_records_are_hidden_on_every_path(workspace, api):
    load(workspace)
    old_fact, current_fact, meeting, old_acme, current_acme, _ = write(workspace, [
        fact("budget", "budget is 40k", hours=0), fact("budget", "budget is 50k", hours=1),
        event("budget meeting", hours=2), fact("size", "acme has 10 staff", entity="acme", hours=0),
        fact("size", "acme has 12 staff", entity="acme", hours=1), link("maria", "acme")])
    old_digest, current_digest = write(workspace, [
        summary("digest one", [meeting], key="digest", hours=3), summary("digest two", [meeting], key="digest",
                                                                          hours=4)])
    body = retrieve(api, {"query": "budget", "explain": True})
    delivered = all_ids(body)
    assert {current_fact, meeting, current_acme, current_digest} <= delivered
    assert not {old_fact, old_acme, old_digest} & delivered
    candidates = body["diagnostics"]["candidates"]
    assert candidates["graph"] and candidates["derivatives"]
    found = {entry["id"]: set(entry["explanation"]["legs"]) for s in body["sections"].values() for entry in s}
    assert "graph" in found[current_acme] and "derivatives" in found[current_digest]
    with_history = all_ids(retrieve(api, {"query": "budget", "includeSuperseded": True}))
    assert {old_fact, old_acme, old_digest} <= with_history


def test_recency_is_measured_at_the_as_of_instant(corrected, api):
    (entry,) = retrieve(api, {"query": "budget", "asOf": at(VALID["v3"] + 168), "explain": True})["sections"]["facts"]
    assert entry["explanation"]["factors"]["recency"]["value"] == pytest.approx(0.5)
    assert Record.objects.get(pk=entry["id"]).occurred_at == T0 + timedelta(hours=VALID["v3"])
