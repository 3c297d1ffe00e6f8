"""``manage.py reembed`` SIGKILLed mid-run in its own process (the real model, the test
database): the batches it committed stay, the workspace still serves the old runtime, and the
next run writes only the rest and swaps. A concurrent index build that was interrupted (an
invalid index of the space's name) is dropped and built again."""
import io
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

from catalog_app.models import EmbeddingSwitch, RecordEmbedding
from catalog_app.services.embedding_index import embedding_index_name, embedding_space_ensure_index_concurrently
from tests.catalog_app.test_worker import database_url, wait_for
from tests.search_app.search_factories import ingest_ready, item

pytestmark = [pytest.mark.model, pytest.mark.django_db(transaction=True)]

PROJECT = Path(__file__).resolve().parents[2]
RECORDS = 120
TARGET = "minilm-l6-v2.onnx"


def in_target() -> int:
    return RecordEmbedding.objects.filter(space=TARGET).count()


def test_a_killed_reembed_command_resumes_where_it_stopped_and_swaps(catalog, tmp_path):
    ids = ingest_ready(catalog, [item(f"Ticket {n}: the parcel to order {n * 3} was lost") for n in range(RECORDS)])
    log = tmp_path / "reembed.log"
    environment = {**os.environ, "DATABASE_URL": database_url(), "EMBEDDING_RUNTIME": "torch",
                   "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    with log.open("w") as output:
        process = subprocess.Popen([sys.executable, "manage.py", "reembed", "--runtime", "onnx", "--batch", "1",
                                    "--workspace", str(catalog.pk)], cwd=PROJECT, env=environment,
                                   stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for(lambda: in_target() >= 5 or process.poll() is not None, 180, "the first batches", [log])
        os.killpg(process.pid, signal.SIGKILL)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)
    at_kill = in_target()
    assert 5 <= at_kill < RECORDS, (at_kill, log.read_text()[-2000:])
    switch = EmbeddingSwitch.objects.get(workspace=catalog)
    assert (switch.serving_runtime, switch.target_runtime, switch.records_done) == ("torch", "onnx", at_kill)

    out = io.StringIO()
    call_command("reembed", "--runtime", "onnx", "--workspace", str(catalog.pk), stdout=out, stderr=io.StringIO())
    assert f"{RECORDS - at_kill} vectors written into {TARGET}; now serving from {TARGET}" in out.getvalue()
    assert set(RecordEmbedding.objects.filter(space=TARGET).values_list("record_id", flat=True)) == set(ids)
    switch.refresh_from_db()
    assert (switch.serving_runtime, switch.target_runtime, switch.records_done) == ("onnx", None, RECORDS)


def test_an_interrupted_concurrent_index_build_is_dropped_and_built_again(catalog):
    ingest_ready(catalog, [item("one"), item("two")])
    name = embedding_index_name(TARGET)
    with connection.cursor() as cursor:
        # Indexes of spaces outlive the rows of a test (other tests may have built this one).
        cursor.execute(f"DROP INDEX IF EXISTS {name}")
        # A failed CREATE INDEX CONCURRENTLY leaves its index behind, invalid: here a unique index
        # over duplicated values, under the name the space's HNSW index has.
        with pytest.raises(Exception, match="could not create unique index"):
            cursor.execute(f"CREATE UNIQUE INDEX CONCURRENTLY {name} ON catalog_app_recordembedding (workspace_id)")
        cursor.execute("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)", [name])
        assert cursor.fetchone() == (False,)
    embedding_space_ensure_index_concurrently(TARGET, 384)
    with connection.cursor() as cursor:
        cursor.execute("SELECT i.indisvalid, pg_get_indexdef(i.indexrelid) FROM pg_index i "
                       "WHERE i.indexrelid = to_regclass(%s)", [name])
        valid, definition = cursor.fetchone()
    assert valid and "USING hnsw" in definition and f"space)::text = '{TARGET}'" in definition, definition
