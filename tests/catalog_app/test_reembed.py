"""Re-embedding into another runtime's space over real PostgreSQL, pgvector and the real model:
every live record gets a vector of the new runtime, queries read the old space until the swap
and the new one after it (whatever the process's own runtime), records written meanwhile get
both vectors, a second run writes nothing, a run stopped after a committed batch resumes from
there, and the progress shows in /health and the console."""
import io
import re

import numpy
import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from catalog_app.catalog.runtime import catalog_for_workspace
from catalog_app.models import EmbeddingSwitch, RecordEmbedding, Workspace
from catalog_app.services.embedding_index import embedding_index_name
from catalog_app.services.reembed import config_for_runtime, reembed, reembed_remaining, reembed_switch
from tests.catalog_app.test_embedding_runtime_space import switch_runtime, vector_hits
from tests.search_app.search_factories import ingest_ready, item

pytestmark = [pytest.mark.model, pytest.mark.django_db(transaction=True)]

TEXTS = ["The customer asked for a refund of the duplicate charge", "Shipping to Norway takes five days",
         "The password reset link expired", "Invoices are sent on the first of the month",
         "The mobile app crashes on login"]


def vectors_of(space: str) -> dict:
    return {record_id: numpy.array(vector) for record_id, vector in
            RecordEmbedding.objects.filter(space=space).values_list("record_id", "embedding")}


def torch_records(catalog, settings, monkeypatch) -> list:
    switch_runtime(settings, monkeypatch, "torch")
    return ingest_ready(catalog, [item(text) for text in TEXTS])


def serving_runtime(workspace) -> str | None:
    return EmbeddingSwitch.objects.filter(workspace=workspace).values_list("serving_runtime", flat=True).first()


def vector_candidates(api) -> int:
    """How many records ``/retrieve``'s vector leg found (every one with a vector in the space it
    reads: the workspace's similarity floor is lowered to -1 by the caller)."""
    response = api.post("/retrieve", {"query": "refund", "explain": True, "raw": True, "topN": 25}, format="json")
    assert response.status_code == 200, response.json()
    return response.json()["diagnostics"]["candidates"]["vector"]


def test_the_command_switches_the_workspace_and_every_process_then_serves_the_new_space(
        catalog, api, settings, monkeypatch):
    ids = torch_records(catalog, settings, monkeypatch)
    out, err = io.StringIO(), io.StringIO()
    call_command("reembed", "--runtime", "onnx", "--batch", "2", stdout=out, stderr=err)
    assert f"{len(TEXTS)} vectors written into minilm-l6-v2.onnx; now serving from minilm-l6-v2.onnx" in out.getvalue()
    assert f"{len(TEXTS)}/{len(TEXTS)}" in err.getvalue()  # the progress bar reached its total
    by_torch, by_onnx = vectors_of("minilm-l6-v2"), vectors_of("minilm-l6-v2.onnx")
    assert set(by_onnx) == set(ids) == set(by_torch)  # the old vectors stay, for a switch back
    for record_id in ids:  # the fp32 export computes the same vectors as torch, to rounding
        assert float(by_torch[record_id] @ by_onnx[record_id]) > 0.9999
    with connection.cursor() as cursor:
        cursor.execute("SELECT i.indisvalid FROM pg_index i WHERE i.indexrelid = to_regclass(%s)",
                       [embedding_index_name("minilm-l6-v2.onnx")])
        assert cursor.fetchone() == (True,)
    switch = EmbeddingSwitch.objects.get(workspace=catalog)
    assert (switch.serving_runtime, switch.target_runtime, switch.records_done) == ("onnx", None, len(TEXTS))
    assert switch.swapped_at is not None

    out = io.StringIO()
    call_command("reembed", "--runtime", "onnx", stdout=out, stderr=io.StringIO())
    assert "0 vectors written" in out.getvalue()

    # This process still runs EMBEDDING_RUNTIME=torch: it now embeds the workspace's queries and
    # new records with the workspace's serving runtime, without a restart.
    assert settings.MEMSEEK["EMBEDDING_RUNTIME"] == "torch"
    assert vector_hits(api, "billed twice, money back")[0] == str(ids[0])
    (late,) = ingest_ready(catalog, [item("A late refund request from a torch process")])
    assert late in vectors_of("minilm-l6-v2.onnx") and late not in vectors_of("minilm-l6-v2")
    record = api.get(f"/records/{late}").json()
    assert record["embedding_space"] == "minilm-l6-v2.onnx", record


def test_while_a_switch_is_pending_queries_read_the_old_space_and_new_records_get_both_vectors(
        catalog, api, admin_client, settings, monkeypatch):
    ids = torch_records(catalog, settings, monkeypatch)
    with connection.cursor() as cursor:  # indexes of spaces outlive the rows of other tests
        cursor.execute(f"DROP INDEX IF EXISTS {embedding_index_name('minilm-l6-v2.onnx-int8')}")
    outcome = reembed_switch(catalog, "onnx-int8", batch=2, stop_after_s=0)
    assert (outcome.written, outcome.swapped) == (2, False)
    assert serving_runtime(catalog) == "torch"  # pinned at the start, not yet switched
    health = api.get("/health").json()["backlog"]["reembedding"]
    assert health == {"workspaces": 1, "records_done": 2, "records_total": len(TEXTS)}
    page = admin_client.get("/console/").content.decode()
    assert "Re-embedding" in page and f'<progress value="2" max="{len(TEXTS)}">' in page

    (pending_write,) = ingest_ready(catalog, [item("Written while the switch is pending")])
    assert pending_write in vectors_of("minilm-l6-v2") and pending_write in vectors_of("minilm-l6-v2.onnx-int8")
    # Queries still embed with torch and read the torch space: the torch vectors of every record.
    assert set(vector_hits(api, "refund")) == {*map(str, ids), str(pending_write)}
    with connection.cursor() as cursor:  # no HNSW index on the pending space yet: built at the end
        cursor.execute("SELECT to_regclass(%s)", [embedding_index_name("minilm-l6-v2.onnx-int8")])
        assert cursor.fetchone() == (None,)

    # /retrieve too: its vector leg finds every record's torch vector, not the three int8 ones.
    Workspace.objects.filter(pk=catalog.pk).update(settings={"retrieval.minVectorSimilarity": -1.0})
    assert vector_candidates(api) == len(TEXTS) + 1

    outcome = reembed_switch(catalog, "onnx-int8", batch=2)
    assert (outcome.written, outcome.swapped) == (len(TEXTS) - 2, True)
    RecordEmbedding.objects.filter(space="minilm-l6-v2").delete()  # after the swap nothing reads them
    assert vector_candidates(api) == len(TEXTS) + 1
    assert serving_runtime(catalog) == "onnx-int8"
    assert set(vectors_of("minilm-l6-v2.onnx-int8")) == {*ids, pending_write}
    assert api.get("/health").json()["backlog"]["reembedding"] == {"workspaces": 0, "records_done": 0,
                                                                    "records_total": 0}
    assert "Re-embedding" not in admin_client.get("/console/").content.decode()


class Stop(Exception):
    pass


def test_a_run_stopped_after_a_batch_keeps_it_and_the_next_run_finishes(catalog, settings, monkeypatch):
    ids = torch_records(catalog, settings, monkeypatch)
    source = catalog_for_workspace(catalog).value("models", "models").embedding
    target = config_for_runtime(source, "onnx")

    def stop(count):
        raise Stop

    with pytest.raises(Stop):
        reembed(workspace_id=catalog.pk, source_space=source.space, target=target, batch=2, progress=stop)
    assert len(vectors_of(target.space)) == 2  # the batch committed before the stop stays
    assert reembed_remaining(workspace_id=catalog.pk, source_space=source.space,
                             target_space=target.space) == len(ids) - 2
    assert reembed(workspace_id=catalog.pk, source_space=source.space, target=target, batch=2) == len(ids) - 2
    assert set(vectors_of(target.space)) == set(ids)


def test_bad_arguments_are_refused_and_write_nothing(catalog, settings, monkeypatch):
    torch_records(catalog, settings, monkeypatch)
    with pytest.raises(CommandError, match="--batch must be at least 1"):
        call_command("reembed", "--runtime", "onnx", "--batch", "0")
    with pytest.raises(CommandError, match="no workspace with id 999999"):
        call_command("reembed", "--runtime", "onnx", "--workspace", "999999")
    with pytest.raises(CommandError):
        call_command("reembed", "--runtime", "tensorflow")
    assert not vectors_of("minilm-l6-v2.onnx")


def test_a_switch_to_the_runtime_already_served_pins_it_and_re_embeds_nothing(catalog, api, settings, monkeypatch):
    ids = torch_records(catalog, settings, monkeypatch)
    out = io.StringIO()
    call_command("reembed", "--runtime", "torch", stdout=out, stderr=io.StringIO())
    assert "0 vectors written into minilm-l6-v2; now serving from minilm-l6-v2" in out.getvalue()
    assert serving_runtime(catalog) == "torch"
    switch_runtime(settings, monkeypatch, "onnx-int8")  # a default change after the pin
    assert set(vector_hits(api, "refund")) == set(map(str, ids))  # still the torch space
    assert not vectors_of("minilm-l6-v2.onnx-int8")


@pytest.mark.parametrize("runtime, batch, message", [
    ("tensorflow", 2, "runtime must be one of torch, onnx, onnx-int8, not 'tensorflow'"),
    ("onnx;drop table", 2, "runtime must be one of"),
    ("onnx", 0, "batch must be at least 1"),
])
def test_the_service_refuses_bad_arguments_before_recording_a_switch(catalog, settings, monkeypatch, runtime, batch,
                                                                      message):
    torch_records(catalog, settings, monkeypatch)
    with pytest.raises(ValueError, match=re.escape(message)):
        reembed_switch(catalog, runtime, batch=batch)
    assert not EmbeddingSwitch.objects.exists()
    assert set(RecordEmbedding.objects.values_list("space", flat=True)) == {"minilm-l6-v2"}


def test_a_switch_to_another_runtime_replaces_a_pending_one(catalog, settings, monkeypatch):
    ids = torch_records(catalog, settings, monkeypatch)
    assert not reembed_switch(catalog, "onnx", batch=2, stop_after_s=0).swapped
    outcome = reembed_switch(catalog, "onnx-int8", batch=2)
    assert (outcome.source_space, outcome.written, outcome.swapped) == ("minilm-l6-v2", len(TEXTS), True)
    switch = EmbeddingSwitch.objects.get(workspace=catalog)
    assert (switch.serving_runtime, switch.target_runtime, switch.records_done) == ("onnx-int8", None, len(TEXTS))
    # Back to torch: every record still has its torch vector, so nothing is embedded again.
    assert reembed_switch(catalog, "torch").written == 0
    assert serving_runtime(catalog) == "torch"
    assert set(vectors_of("minilm-l6-v2")) == set(ids)
