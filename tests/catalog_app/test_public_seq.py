"""The ``seq`` a response shows is the workspace's own ordinal: workspace B's responses say
nothing of how much workspace A writes, and within a workspace the ordinal sorts like the global
``seq`` even under concurrent writers (the insert trigger of migration 0010)."""
import threading

import pytest
from django.db import connection

from catalog_app.models import Record, Workspace
from catalog_app.services.enrichment import records_enrich
from catalog_app.services.record_ingest import record_ingest_batch
from catalog_app.services.workspaces import workspace_create
from tests.retrieval_app.factories import event, load


def post(client, *records) -> list[str]:
    response = client.post("/records", {"records": list(records)}, format="json")
    assert response.status_code == 200, response.json()
    return [item["id"] for item in response.json()["inserted"]]


def note(text: str, **fields) -> dict:
    return {"entity": "user-1", "collection": "main", "type": "note", "text": text, **fields}


def test_another_workspaces_writes_leave_no_trace_in_seq(catalog, api, other_workspace_api):
    (first,) = post(api, note("b one", key="plan"))
    for batch in range(5):
        post(other_workspace_api, *(note(f"a {batch}.{i}") for i in range(10)))
    (second,) = post(api, note("b two", key="plan"))
    assert Record.objects.exclude(workspace=catalog).count() == 50
    assert [api.get(f"/records/{rid}").json()["seq"] for rid in (first, second)] == [1, 2]
    timeline = api.get("/timeline?entity=user-1").json()
    assert [row["seq"] for row in timeline["records"]] == [2, 1]
    page = api.get("/timeline?entity=user-1&limit=1").json()
    assert (page["records"][0]["id"], page["next_before_seq"]) == (second, 2)
    rest = api.get("/timeline?entity=user-1&limit=1&before_seq=2").json()
    assert ([row["id"] for row in rest["records"]], rest["next_before_seq"]) == ([first], None)
    history = api.get("/document/history?entity=user-1&collection=main&key=plan").json()
    assert [version["seq"] for version in history["versions"]] == [2, 1]
    # The global seq did move: A's 50 rows sit between B's two.
    global_first, global_second = (Record.objects.get(pk=rid).seq for rid in (first, second))
    assert Record.objects.filter(seq__gt=global_first, seq__lt=global_second).count() == 50


@pytest.mark.model
def test_memory_cursors_carry_the_workspace_ordinal(catalog, api, other_workspace_api):
    (first,) = post(api, note("b one"))
    post(other_workspace_api, *(note(f"a {i}") for i in range(20)))
    (second,) = post(api, note("b two"))
    records_enrich(record_ids=[first, second])
    latest = api.get("/memory/latest?limit=1").json()  # a cursor is ``<microseconds>.<seq>``
    assert [hit["id"] for hit in latest["hits"]] == [second] and latest["next_cursor"].endswith(".2")
    grep = api.get("/memory/grep?q=b&limit=1").json()
    assert [hit["id"] for hit in grep["hits"]] == [second] and grep["next_cursor"].endswith(".2")
    rest = api.get(f"/memory/grep?q=b&limit=1&cursor={grep['next_cursor']}").json()
    assert [hit["id"] for hit in rest["hits"]] == [first]


def test_a_cursor_between_or_past_the_ordinals_pages_correctly(catalog, api):
    ids = post(api, *(note(f"n{i}") for i in range(5)))
    Record.objects.filter(pk=ids[2]).delete()  # a gap: ordinal 3 names no row
    assert [r["seq"] for r in api.get("/timeline?entity=user-1&before_seq=4").json()["records"]] == [2, 1]
    assert [r["seq"] for r in api.get("/timeline?entity=user-1&before_seq=3").json()["records"]] == [2, 1]
    assert [r["seq"] for r in api.get("/timeline?entity=user-1&before_seq=99").json()["records"]] == [5, 4, 2, 1]
    assert api.get("/timeline?entity=user-1&before_seq=1").json()["records"] == []


def test_each_record_draws_one_global_seq(catalog, api):
    ids = post(api, *(note(f"n{i}") for i in range(4)))
    ids += post(api, note("n4"))
    seqs = [Record.objects.get(pk=rid).seq for rid in ids]
    assert [b - a for a, b in zip(seqs, seqs[1:])] == [1, 1, 1, 1]


def test_each_workspace_counts_from_one(catalog, api, other_workspace_api):
    post(other_workspace_api, note("a"))
    post(api, note("b"))
    assert sorted(Record.objects.values_list("workspace_seq", flat=True)) == [1, 1]


@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_get_dense_ordinals_in_global_seq_order():
    # The retrieval catalog has no required processor: the writes enqueue no enrichment.
    workspace = load(workspace_create(name="busy")[0])
    other = load(workspace_create(name="quiet")[0])
    failures = []

    def writer(target: Workspace, name: str):
        try:
            for batch in range(6):
                record_ingest_batch(workspace=target, items=[event(f"{name}-{batch}-{i}") for i in range(3)])
        except Exception as error:  # reported below; a thread cannot fail the test itself
            failures.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=writer, args=(workspace if n % 3 else other, f"w{n}")) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
    for target, writers in ((workspace, 4), (other, 2)):
        rows = list(Record.objects.filter(workspace=target).order_by("seq").values_list("workspace_seq", flat=True))
        assert rows == list(range(1, writers * 18 + 1))
