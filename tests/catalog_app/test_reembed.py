"""Re-embedding into another runtime's space over real PostgreSQL, pgvector and the real model:
every live record gets a vector of the new runtime, a second run writes nothing, a run stopped
after a committed batch resumes from there, and records of the old runtime are found again by
vector search once the process runs on the new one."""
import io

import numpy
import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from catalog_app.catalog.runtime import catalog_for_workspace
from catalog_app.models import RecordEmbedding
from catalog_app.services.embedding_index import embedding_index_name
from catalog_app.services.reembed import config_for_runtime, reembed, reembed_remaining
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


def test_the_command_fills_the_new_space_once_and_search_finds_old_records_on_the_new_runtime(
        catalog, api, settings, monkeypatch):
    ids = torch_records(catalog, settings, monkeypatch)
    out, err = io.StringIO(), io.StringIO()
    call_command("reembed", "--runtime", "onnx", "--batch", "2", stdout=out, stderr=err)
    assert f"{len(TEXTS)} vectors written into minilm-l6-v2.onnx" in out.getvalue()
    assert f"{len(TEXTS)}/{len(TEXTS)}" in err.getvalue()  # the progress bar reached its total
    by_torch, by_onnx = vectors_of("minilm-l6-v2"), vectors_of("minilm-l6-v2.onnx")
    assert set(by_onnx) == set(ids)
    for record_id in ids:  # the fp32 export computes the same vectors as torch, to rounding
        assert float(by_torch[record_id] @ by_onnx[record_id]) > 0.9999
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [embedding_index_name("minilm-l6-v2.onnx")])
        assert cursor.fetchone()[0]

    out = io.StringIO()
    call_command("reembed", "--runtime", "onnx", stdout=out, stderr=io.StringIO())
    assert "0 vectors written" in out.getvalue()

    switch_runtime(settings, monkeypatch, "onnx")
    assert vector_hits(api, "billed twice, money back")[0] == str(ids[0])

    # Restarted on onnx: a record an old torch process wrote meanwhile is caught by --from.
    switch_runtime(settings, monkeypatch, "torch")
    (late,) = ingest_ready(catalog, [item("A late refund request from a torch process")])
    switch_runtime(settings, monkeypatch, "onnx")
    out = io.StringIO()
    call_command("reembed", "--runtime", "onnx", "--from", "torch", stdout=out, stderr=io.StringIO())
    assert "1 vectors written into minilm-l6-v2.onnx" in out.getvalue()
    assert set(vectors_of("minilm-l6-v2.onnx")) == {*ids, late}


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
