"""Test factories: records written straight to the table with consistent fields.

``record_make`` bypasses the ingest service on purpose (reads are tested on their own), so it
keeps the invariants ingest would: ``content["text"] == text``, ``collection_hash`` is the
contract hash of the catalog's collection version, tombstones carry
``{"text": "", "tombstone": True}`` and are ready, the BM25 term frequencies are the text's
(``bm25_terms``, as ingest stores them), and the lexical index follows the write.
"""
from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from django.utils import timezone

from catalog_app.bm25_terms import term_frequencies
from catalog_app.en_terms import en_term_frequencies
from catalog_app.catalog.hashing import definition_hash
from catalog_app.catalog.runtime import catalog_for_workspace
from catalog_app.lexical.maintenance import lexical_records_changed
from catalog_app.models import Record, Workspace

SYSTEM_HASH = definition_hash({"collection": "_system"})


def record_make(workspace: Workspace, *, entity: str = "user-1", collection: str = "main", version: int = 1,
                type: str = "note", key: str | None = None, text: str = "hello", content: dict | None = None,
                status: str = "active", ready: bool = True, tombstone: bool = False,
                derived_from: list[uuid.UUID] | None = None, run_id: uuid.UUID | None = None, depth: int = 0,
                scores: dict | None = None, annotations: dict | None = None, enrichment_error=None,
                dedupe_key: str | None = None, occurred_at: datetime | None = None) -> Record:
    """Insert one record and return it with its database-assigned ``seq``."""
    if collection == "_system":
        collection_hash = SYSTEM_HASH
    else:
        definition = catalog_for_workspace(workspace).get("collection", collection, version)
        assert definition is not None, f"collection {collection}@{version} is not loaded"
        collection_hash = definition.contract_hash
    if tombstone:
        text, body = "", {"text": "", "tombstone": True}
    else:
        body = {**(content or {}), "text": text}
    now = timezone.now()
    bm25_tf, bm25_length = term_frequencies(text)
    en_tf, en_length = en_term_frequencies(text)
    record = Record.objects.create(
        workspace=workspace, entity=entity, collection=collection, collection_version=version,
        collection_hash=collection_hash, type=type, key=key, status=status, text=text, content=body,
        scores=scores or {}, annotations=annotations or {}, enrichment_error=enrichment_error, depth=depth,
        derived_from=list(derived_from or []), run_id=run_id, dedupe_key=dedupe_key,
        occurred_at=occurred_at or now, created_at=now, last_accessed=now,
        enriched_at=now if (ready or tombstone) else None, tombstone=tombstone, bm25_tf=bm25_tf,
        bm25_length=bm25_length, en_tf=en_tf, en_length=en_length)
    lexical_records_changed(record_ids=[record.pk], inserted=True)
    record.refresh_from_db()
    return record


def pending_record(workspace: Workspace, *, collection: str, text: str, type: str = "note", age_s: float = 0,
                   **fields) -> Record:
    """An unready record as ingest leaves it when required processors remain, written
    ``age_s`` seconds ago."""
    definition = catalog_for_workspace(workspace).get("collection", collection, 1)
    created = timezone.now() - timedelta(seconds=age_s)
    record = Record.objects.create(
        workspace=workspace, collection=collection, collection_version=1, collection_hash=definition.contract_hash,
        entity="customer-1", type=type, text=text, content={"text": text}, occurred_at=created,
        created_at=created, last_accessed=created, **fields)
    lexical_records_changed(record_ids=[record.pk], inserted=True)
    record.refresh_from_db()
    return record
