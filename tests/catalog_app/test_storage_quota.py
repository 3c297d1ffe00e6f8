"""Storage quotas (catalog_app.services.storage_quota): a write that would bring a workspace past
its record or byte quota is ``413 quota_exceeded`` and changes nothing; the counts the trigger
keeps equal a recount of the records (the oracle), and stay exact with concurrent writers."""
from __future__ import annotations

import threading

import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings as hypothesis_settings, strategies as st
from rest_framework.test import APIClient

from catalog_app.models import Record, WorkspaceRecordCounter
from catalog_app.services.record_ingest import record_ingest_batch
from catalog_app.services.workspaces import workspace_create
from memseek_site.errors import ApiError
from tests.memseek_site.test_openapi_responses import check
from tests.retrieval_app.lexical_factories import load_lexical_catalog, note


def held(workspace) -> tuple[int, int]:
    """(records, bytes) as the counter row holds them."""
    counter = WorkspaceRecordCounter.objects.filter(workspace=workspace).first()
    return (counter.last_seq, counter.stored_bytes) if counter is not None else (0, 0)


def recounted(workspace) -> tuple[int, int]:
    """(records, bytes) counted from the records themselves: the oracle."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*), coalesce(sum(octet_length(text) + octet_length(content::text)), 0) "
                       "FROM catalog_app_record WHERE workspace_id = %s", [workspace.pk])
        records, stored = cursor.fetchone()
    return int(records), int(stored)


def set_limits(workspace, **stored) -> None:
    workspace.settings = {**workspace.settings, **stored}
    workspace.save()


@pytest.fixture
def notes(workspace, tmp_path):
    return load_lexical_catalog(workspace, tmp_path)


def post(api, *items):
    return api.post("/records", {"records": list(items)}, format="json")


def assert_quota_exceeded(response, quota: str, limit: int, path: str = "records") -> None:
    assert response.status_code == 413, response.content
    body = response.json()
    assert (body["error"], body["quota"], body["limit"], body["path"]) == ("quota_exceeded", quota, limit, path)
    assert body["would_hold"] > limit


def test_a_batch_past_the_record_quota_writes_nothing(notes, api, settings):
    settings.MEMSEEK = {"QUOTA_RECORDS": 3}
    assert post(api, note("one"), note("two")).status_code in (200, 201)
    before = (held(notes), list(Record.objects.filter(workspace=notes).values_list("id", flat=True)))
    assert_quota_exceeded(post(api, note("three"), note("four")), "records", 3)
    assert (held(notes), list(Record.objects.filter(workspace=notes).values_list("id", flat=True))) == before
    assert post(api, note("three")).status_code in (200, 201)  # exactly up to the quota fits
    refused = post(api, note("four"))
    assert_quota_exceeded(refused, "records", 3)
    check(refused, "POST", "/records", 413)
    assert held(notes) == recounted(notes) and held(notes)[0] == 3


def test_the_byte_quota_counts_text_and_content(notes, api, settings):
    first = note("x" * 100, tags=["a"])
    assert post(api, first).status_code in (200, 201)
    used = held(notes)[1]
    assert used == recounted(notes)[1] and used > 100
    settings.MEMSEEK = {"QUOTA_BYTES": used + 50}
    assert_quota_exceeded(post(api, note("y" * 100)), "bytes", used + 50)
    assert post(api, note("y" * 10)).status_code in (200, 201)
    assert held(notes) == recounted(notes)


def test_a_replayed_dedupe_key_costs_nothing(notes, api, settings):
    settings.MEMSEEK = {"QUOTA_RECORDS": 1}
    keyed = note("only once", dedupe_key="k-1")
    assert post(api, keyed).status_code in (200, 201)
    replay = post(api, keyed)
    assert replay.status_code in (200, 201) and len(replay.json()["duplicates"]) == 1
    assert held(notes)[0] == 1


def test_workspace_settings_override_the_deployment_quota(notes, api, settings):
    settings.MEMSEEK = {"QUOTA_RECORDS": 1}
    set_limits(notes, **{"limits.records": 0})  # this workspace: no quota
    assert post(api, note("a"), note("b")).status_code in (200, 201)
    set_limits(notes, **{"limits.records": 2})
    assert_quota_exceeded(post(api, note("c")), "records", 2)


@pytest.mark.parametrize("stored, setting", [
    ({"limits.records": -1}, "limits.records"),
    ({"limits.records": "10"}, "limits.records"),
    ({"limits.bytes": 1.5}, "limits.bytes"),
    ({"limits.bytes": True}, "limits.bytes"),
])
def test_a_bad_stored_quota_is_a_workspace_setting_error_and_writes_nothing(notes, api, stored, setting):
    set_limits(notes, **stored)
    response = post(api, note("refused"))
    assert response.status_code == 409, response.content
    assert (response.json()["error"], response.json()["setting"]) == ("workspace_setting", setting)
    assert not Record.objects.filter(workspace=notes).exists()


@hypothesis_settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.lists(st.tuples(st.text(min_size=1, max_size=40).filter(lambda t: "\x00" not in t
                                                                                  and t.strip()),
                                           st.lists(st.text(max_size=8).filter(lambda t: "\x00" not in t),
                                                    max_size=3)),
                                 min_size=1, max_size=4), min_size=1, max_size=4))
def test_the_counter_equals_a_recount_after_any_writes(notes, batches):
    """Property: whatever is written (any text, any content, rejected batches included), the
    trigger's counts equal the records recounted."""
    for batch in batches:
        try:
            record_ingest_batch(workspace=notes, items=[note(text, tags=tags) for text, tags in batch])
        except ApiError:
            pass
        assert held(notes) == recounted(notes)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("quota", ["records", "bytes"])
def test_concurrent_writers_fill_the_quota_exactly(tmp_path, settings, quota):
    """Eight threads, each its own connection, race to write one record each into room for five:
    exactly five commit, whatever the interleaving, and the counts match the records."""
    workspace, _ = workspace_create(name=f"quota-race-{quota}")
    load_lexical_catalog(workspace, tmp_path)
    text = "r" * 64
    if quota == "records":
        settings.MEMSEEK = {"QUOTA_RECORDS": 5}
    else:
        record_ingest_batch(workspace=workspace, items=[note(text)])
        one = held(workspace)[1]
        settings.MEMSEEK = {"QUOTA_BYTES": one * 6}  # the first record and five more
    start, outcomes = threading.Barrier(8), []

    def writer(n: int) -> None:
        try:
            start.wait()
            record_ingest_batch(workspace=workspace, items=[note(text, entity=f"writer-{n}")])
            outcomes.append("written")
        except ApiError as error:
            outcomes.append(error.code)
        finally:
            connection.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["quota_exceeded"] * 3 + ["written"] * 5
    assert held(workspace) == recounted(workspace)
    assert held(workspace)[0] == (5 if quota == "records" else 6)


def test_the_quota_is_per_workspace(notes, api, settings, db, tmp_path):
    settings.MEMSEEK = {"QUOTA_RECORDS": 1}
    assert post(api, note("mine")).status_code in (200, 201)
    other, key = workspace_create(name="quota-other")
    load_lexical_catalog(other, tmp_path / "other")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert post(client, note("theirs")).status_code in (200, 201)
    assert_quota_exceeded(post(api, note("mine again")), "records", 1)


def test_approving_a_draft_past_the_quota_is_refused_and_the_draft_stays_pending(catalog, api, settings):
    from tests.catalog_app.test_review import draft, state

    proposal = draft(catalog)
    settings.MEMSEEK = {"QUOTA_RECORDS": 1}
    before = state(catalog)
    response = api.post(f"/records/{proposal.id}/approve")
    assert_quota_exceeded(response, "records", 1, "id")  # the review routes name the draft they write from
    check(response, "POST", "/records/{id}/approve", 413)
    assert state(catalog) == before  # no successor, no audit row
    settings.MEMSEEK = {"QUOTA_RECORDS": 2}
    assert api.post(f"/records/{proposal.id}/approve").status_code == 200
