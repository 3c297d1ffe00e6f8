"""Outside a transaction the legs run concurrently, each on its own connection, and give the
same context as the sequential path inside one."""
import pytest
from django.db import connection, transaction

from catalog_app.services.workspaces import workspace_create
from retrieval_app import legs
from retrieval_app.service import retrieve
from tests.retrieval_app.factories import event, fact, link, load, summary, write


def strip(body):
    return {name: [(e["id"], e["score"], e["tokens"]) for e in entries] for name, entries in body["sections"].items()}


@pytest.mark.django_db(transaction=True)
def test_concurrent_legs_match_the_sequential_path(monkeypatch, settings):
    settings.MEMSEEK = {"TOUCH_ON_READ": False}  # a touch between the calls would change frequency
    workspace, _ = workspace_create(name="parallel")
    load(workspace)
    _, meeting, _ = write(workspace, [fact("budget", "budget is 50k"), event("budget meeting"), link("maria", "acme")])
    write(workspace, [summary("meeting summary", [meeting]), fact("size", "acme has 12 staff", entity="acme")])
    threads = []
    original = legs.run_parallel

    def spy(tasks):
        threads.append(not connection.in_atomic_block and len(tasks) > 1)
        return original(tasks)

    monkeypatch.setattr("retrieval_app.service.run_parallel", spy)
    concurrent = retrieve(workspace=workspace, request={"query": "budget", "explain": True})
    assert all(threads) and len(threads) == 2
    with transaction.atomic():
        sequential = retrieve(workspace=workspace, request={"query": "budget", "explain": True})
    assert strip(concurrent) == strip(sequential)
    assert concurrent["diagnostics"]["candidates"] == sequential["diagnostics"]["candidates"]
    assert sum(len(entries) for entries in concurrent["sections"].values()) == 5
