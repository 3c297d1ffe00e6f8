"""A runtime change over real PostgreSQL, pgvector and the real model: records embedded by one
runtime and a query embedded by another are never compared. Each runtime stores its vectors in
its own space (with its own HNSW index), and a vector search reads only the space of the
runtime that embedded its query."""
import pytest
from django.db import connection

from catalog_app.catalog import runtime as catalog_runtime
from catalog_app.models import RecordEmbedding
from catalog_app.services.embedding_index import embedding_index_name
from tests.search_app.search_factories import ingest_ready, item

# Committed transactions, as in service: the index of a new space is created by the enrichment
# transaction that first writes into it, which PostgreSQL refuses inside a transaction that
# still holds deferred foreign-key checks of rows inserted before (a test-wide transaction).
pytestmark = [pytest.mark.model, pytest.mark.django_db(transaction=True)]


def switch_runtime(settings, monkeypatch, runtime: str) -> None:
    """What a restart with ``EMBEDDING_RUNTIME=runtime`` does: the setting, and catalogs built anew."""
    settings.MEMSEEK = {"EMBEDDING_RUNTIME": runtime, "TOUCH_ON_READ": False}
    monkeypatch.setattr(catalog_runtime, "_cache", {})


def vector_hits(api, q: str) -> list[str]:
    response = api.post("/search", {"q": q, "mode": "vector", "rank": ["similarity"]}, format="json")
    assert response.status_code == 200, response.json()
    return [hit["id"] for hit in response.json()["hits"]]


def test_records_of_one_runtime_are_never_compared_with_a_query_of_another(catalog, api, settings, monkeypatch):
    switch_runtime(settings, monkeypatch, "torch")
    (by_torch,) = ingest_ready(catalog, [item("The customer asked for a refund of the duplicate charge")])
    assert vector_hits(api, "billed twice, money back") == [str(by_torch)]

    switch_runtime(settings, monkeypatch, "onnx-int8")
    (by_int8,) = ingest_ready(catalog, [item("The invoice was refunded after a double charge")])
    assert vector_hits(api, "billed twice, money back") == [str(by_int8)]
    spaces = dict(RecordEmbedding.objects.values_list("record_id", "space"))
    assert spaces == {by_torch: "minilm-l6-v2", by_int8: "minilm-l6-v2.onnx-int8"}
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [embedding_index_name("minilm-l6-v2.onnx-int8")])
        assert cursor.fetchone()[0]

    switch_runtime(settings, monkeypatch, "torch")
    assert vector_hits(api, "billed twice, money back") == [str(by_torch)]
