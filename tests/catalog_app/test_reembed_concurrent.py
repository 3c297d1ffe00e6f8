"""A workspace switched from torch to onnx-int8 while 4 threads write records and 4 threads
search it, all in this process against the real database and the real model: every search
answers 200 with vector hits, each reads exactly one space (the SQL it ran is captured on its
own connection) and no reader goes back to the old space once it has seen the new one, and after
the swap every live record, including those written during the switch, has an onnx-int8 vector.

torch → onnx-int8 rather than → onnx: the fp32 export's vectors equal torch's to rounding, so
a mix of those two would be invisible in the scores; int8's are measurably different."""
import re
import threading
import time

import numpy
import pytest
from django.db import connection
from rest_framework.test import APIClient

from catalog_app.catalog.runtime import catalog_for_workspace
from catalog_app.embedding import embed_texts
from catalog_app.embedding_serving import config_for_runtime
from catalog_app.models import EmbeddingSwitch, Record, RecordEmbedding, Workspace
from catalog_app.services.reembed import reembed_switch
from tests.catalog_app.test_embedding_runtime_space import switch_runtime
from tests.search_app.search_factories import ingest_ready, item

pytestmark = [pytest.mark.model, pytest.mark.django_db(transaction=True)]

OLD, NEW = "minilm-l6-v2", "minilm-l6-v2.onnx-int8"
SPACE_IN_SQL = re.compile(r"space = '([^']+)'")
QUERIES = ["refund for a double charge", "shipping delay", "password reset", "invoice date", "app crash"]
TOPICS = ["The customer asked for a refund of the duplicate charge", "Shipping to Norway takes five days",
          "The password reset link expired", "Invoices are sent on the first of the month",
          "The mobile app crashes on login"]
AFTER_SWAP = 3  # searches each reader makes once it has seen the new space


def spaces_read(client: APIClient, q: str) -> tuple[int, list, set[str]]:
    """One vector search: its status, its hits' ``(id, similarity)`` and the embedding spaces its
    SQL read."""
    statements: list[str] = []

    def capture(execute, sql, params, many, context):
        statements.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(capture):
        response = client.post("/search", {"q": q, "mode": "vector", "rank": ["similarity"], "k": 5}, format="json")
    hits = [(hit["id"], hit["rank_score"]) for hit in response.json()["hits"]] if response.status_code == 200 else []
    return response.status_code, hits, {space for sql in statements for space in SPACE_IN_SQL.findall(sql)}


def test_a_switch_under_four_writers_and_four_readers_never_mixes_spaces_and_leaves_every_record_a_new_vector(
        catalog, workspace_and_key, settings, monkeypatch):
    switch_runtime(settings, monkeypatch, "torch")
    settings.MEMSEEK = {**settings.MEMSEEK, "QUERY_EMBEDDING_CACHE": 0, "SEARCH_MAX_CONCURRENCY": 1}
    ingest_ready(catalog, [item(f"{TOPICS[n % len(TOPICS)]} (case {n})") for n in range(60)])
    torch_config = catalog_for_workspace(catalog).value("models", "models").embedding
    embed_texts(config_for_runtime(torch_config, "onnx-int8"), ["warm the int8 graph up"])

    errors: list = []
    swapped = threading.Event()
    searches: dict[int, list] = {n: [] for n in range(4)}
    written: list = []
    started = threading.Barrier(9)

    def reader(number: int) -> None:
        client = APIClient(raise_request_exception=False)
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {workspace_and_key[1]}")
        try:
            started.wait(60)
            after = 0
            while after < AFTER_SWAP:
                done = swapped.is_set()
                q = QUERIES[len(searches[number]) % len(QUERIES)]
                searches[number].append((q, *spaces_read(client, q)))
                after += done
        except Exception as error:  # reported below: the assertion names it
            errors.append(error)
        finally:
            connection.close()

    def writer(number: int) -> None:
        try:
            started.wait(60)
            workspace = Workspace.objects.get(pk=catalog.pk)
            count = 0
            while not swapped.is_set() or count < 2:
                written.extend(ingest_ready(workspace, [item(f"{TOPICS[count % len(TOPICS)]} (writer {number}, "
                                                             f"write {count})")]))
                count += 1
        except Exception as error:  # reported below: the assertion names it
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=reader, args=(n,)) for n in range(4)]
    threads += [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    started.wait(60)
    time.sleep(1)  # some searches and writes before the switch starts
    try:
        outcome = reembed_switch(Workspace.objects.get(pk=catalog.pk), "onnx-int8", batch=2)
    finally:
        swapped.set()
        for thread in threads:
            thread.join(300)
    assert errors == []
    assert outcome.swapped
    assert EmbeddingSwitch.objects.get(workspace=catalog).serving_runtime == "onnx-int8"

    for number, runs in searches.items():
        assert [status for _, status, _, _ in runs] == [200] * len(runs), number
        assert all(hits for _, _, hits, _ in runs), number  # no empty vector results
        assert all(len(spaces) == 1 for _, _, _, spaces in runs), (number, runs)  # one space a query
        order = [next(iter(spaces)) for _, _, _, spaces in runs]
        assert order[0] == OLD and order[-1] == NEW, (number, order)
        first_new = order.index(NEW)
        assert set(order[first_new:]) == {NEW}, (number, order)  # never back to the old space
    assert_scored_by_the_runtime_of_their_space(torch_config, [run for runs in searches.values() for run in runs])
    assert written  # the writers wrote during the switch

    live = set(Record.objects.filter(workspace=catalog, tombstone=False, enriched_at__isnull=False)
               .values_list("pk", flat=True))
    assert set(written) <= live
    assert set(RecordEmbedding.objects.filter(space=NEW).values_list("record_id", flat=True)) == live


def assert_scored_by_the_runtime_of_their_space(torch_config, runs) -> None:
    """Every hit's similarity is the cosine of the query embedded by the runtime of the space the
    search read with the record's vector in that space: the query vector and the record vectors
    came from one runtime."""
    configs = {OLD: torch_config, NEW: config_for_runtime(torch_config, "onnx-int8")}
    query_vectors = {(space, q): numpy.array(embed_texts(configs[space], [q])[0], dtype=numpy.float32)
                     for space in configs for q in QUERIES}
    stored = {(space, str(record_id)): numpy.array(vector, dtype=numpy.float32) for record_id, space, vector in
              RecordEmbedding.objects.values_list("record_id", "space", "embedding")}
    for q, _, hits, spaces in runs:
        (space,) = spaces
        for record_id, similarity in hits:
            expected = float(query_vectors[space, q] @ stored[space, record_id])
            assert similarity == pytest.approx(expected, abs=1e-4), (q, space, record_id)
