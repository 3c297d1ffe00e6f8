"""Helpers that write records the way production does, for search integration tests.

Records go through ``record_ingest_batch`` (every write-side rule applies) and are then
enriched by calling ``records_enrich`` directly: under the pytest-django ``db`` fixture the
test runs inside one transaction, so the ``transaction.on_commit`` hook that would enqueue
enrichment never fires. Enrichment embeds with the real MiniLM model.
"""
from __future__ import annotations

import uuid
from pathlib import Path

from django.db import connection

from catalog_app.catalog.runtime import catalog_for_workspace
from catalog_app.embedding import embed_texts
from catalog_app.services.catalog_load import catalog_load
from catalog_app.services.enrichment import records_enrich
from catalog_app.services.record_ingest import record_ingest_batch

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SEARCH_FIELDS_CATALOG = FIXTURES / "catalogs" / "search_fields"
BATCH = 100


def item(text: str | None = "hello", **fields) -> dict:
    """One ``POST /records`` item with test defaults (entity ``user-1``, type ``note``,
    collection ``main``); keyword arguments override or add item keys."""
    body = {"entity": "user-1", "type": "note", "collection": "main", **fields}
    if text is not None:
        body["text"] = text
    return body


def ingest(workspace, items: list[dict]) -> list[uuid.UUID]:
    """Ingest ``items`` (in batches of at most 100) without enriching; returns the inserted ids
    in item order. Records whose collection has required non-client processors stay unready."""
    ids: list[uuid.UUID] = []
    for start in range(0, len(items), BATCH):
        result = record_ingest_batch(workspace=workspace, items=items[start:start + BATCH])
        assert not result.duplicates, "search factories never send duplicates"
        ids.extend(outcome.id for outcome in sorted(result.inserted, key=lambda outcome: outcome.index))
    return ids


def ingest_ready(workspace, items: list[dict]) -> list[uuid.UUID]:
    """Ingest ``items`` and enrich them at once, so every record is ready; returns the ids in
    item order."""
    ids = ingest(workspace, items)
    enrich(ids)
    return ids


def enrich(ids) -> None:
    """Run the enrichment service on ``ids`` (real MiniLM embeddings) and check they became ready."""
    ids = [str(record_id) for record_id in ids]
    records_enrich(record_ids=ids)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM catalog_app_record WHERE id = ANY(%s::uuid[]) AND enriched_at IS NULL",
                       [ids])
        assert cursor.fetchone()[0] == 0, "enrichment left records unready"


def one(workspace, text: str = "hello", **fields) -> uuid.UUID:
    """Ingest and enrich one record; returns its id."""
    return ingest_ready(workspace, [item(text, **fields)])[0]


def load_search_fields_catalog(workspace):
    """Load ``fixtures/catalogs/search_fields`` into ``workspace``; returns it refreshed."""
    catalog_load(workspace=workspace, directory=SEARCH_FIELDS_CATALOG)
    workspace.refresh_from_db()
    return workspace


def ingest_with_shared_vectors(workspace, items: list[dict], *, processor: str = "embedding_v1") -> list[uuid.UUID]:
    """Bulk path for large corpora: ingest ``items``, embed their *distinct* texts with the real
    model in one ``embed_texts`` call, store each record's vector and mark the records ready as
    enrichment would for collections whose only non-client required processor is the
    embedding ``processor``. Returns the ids in item order."""
    ids = ingest(workspace, items)
    embedding = catalog_for_workspace(workspace).value("models", "models").embedding
    texts = sorted({entry["text"] for entry in items})
    position = {text: index for index, text in enumerate(texts, start=1)}
    literals = ["[" + ",".join(repr(float(x)) for x in vector) + "]" for vector in embed_texts(embedding, texts)]
    with connection.cursor() as cursor:
        # One set-based insert: each record joins the vector of its text by position.
        cursor.execute("INSERT INTO catalog_app_recordembedding (record_id, workspace_id, space, embedding, "
                       "created_at) SELECT item.id, %s, %s, vec.literal::vector, now() "
                       "FROM unnest(%s::uuid[], %s::int[]) AS item(id, position) "
                       "JOIN unnest(%s::text[]) WITH ORDINALITY AS vec(literal, position) USING (position)",
                       [workspace.pk, embedding.space, [str(record_id) for record_id in ids],
                        [position[entry["text"]] for entry in items], literals])
        cursor.execute("UPDATE catalog_app_record SET enriched_at = now(), "
                       "annotation_meta = annotation_meta || jsonb_build_object(%s::text, "
                       "jsonb_build_object('status', 'ok', 'space', %s::text)) WHERE id = ANY(%s::uuid[])",
                       [processor, embedding.space, [str(record_id) for record_id in ids]])
    return ids
