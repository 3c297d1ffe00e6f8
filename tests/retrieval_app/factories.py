"""Helpers for the retrieval tests over ``fixtures/catalogs/retrieval``.

Records go through ``record_ingest_batch`` like production writes. No collection of the
fixture has a required processor, so every record is ready at insert and no model is loaded;
``catalog_dir(embedded=True)`` adds the ``notes`` collection, embedded by the real MiniLM
(``enrich`` runs ``records_enrich`` explicitly: under the ``db`` fixture the test runs in one
transaction, so the ``on_commit`` enrichment hook never fires).
"""
from __future__ import annotations

import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

from catalog_app.models import Record
from catalog_app.services.catalog_load import catalog_load
from catalog_app.services.enrichment import records_enrich
from catalog_app.services.record_ingest import record_ingest_batch

RETRIEVAL_CATALOG = Path(__file__).resolve().parents[2] / "fixtures" / "catalogs" / "retrieval"
T0 = datetime(2026, 1, 1, 9, 0, tzinfo=timezone.utc)

EMBEDDING_PROCESSOR = """processors:
  - name: embedding_v1
    kind: embedding
    input: {collections: [notes]}
"""
NOTES_COLLECTION = """collections:
  - name: notes
    version: 1
    active: true
    mode: mixed
    schema:
      type: object
      required: [text]
      properties:
        text: {type: string}
        visibility: {type: string}
        owner: {type: string}
    fields:
      visibility: {path: content.visibility, type: string, filter: true, project: true}
      owner: {path: content.owner, type: string, filter: true, project: true}
    required_processors: [embedding_v1]
    search_profile: pg_default
"""
NOTES_POLICY = "  notes: {visibility: visibility, owner_agent_id: owner}\n"


def catalog_dir(tmp_path: Path, *, embedded: bool = False, drop: tuple[str, ...] = (),
                files: dict[str, str] | None = None) -> Path:
    """A copy of the retrieval catalog; ``embedded`` adds the MiniLM-embedded ``notes``
    collection (private-capable, like facts)."""
    target = tmp_path / "retrieval_catalog"
    shutil.copytree(RETRIEVAL_CATALOG, target)
    for relative in drop:
        (target / relative).unlink()
    extra = dict(files or {})
    if embedded:
        extra.setdefault("conf/processors/embedding.yaml", EMBEDDING_PROCESSOR)
        extra.setdefault("collections/notes.yaml", NOTES_COLLECTION)
        policy = target / "conf" / "retrieval.yaml"
        policy.write_text(policy.read_text() + NOTES_POLICY)
    for relative, text in extra.items():
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        (target / relative).write_text(text)
    return target


def load(workspace, directory: Path = RETRIEVAL_CATALOG):
    catalog_load(workspace=workspace, directory=directory)
    workspace.refresh_from_db()
    return workspace


def write(workspace, items: list[dict]) -> list[str]:
    """Ingest ``items`` in one batch; returns the ids (strings) in item order."""
    result = record_ingest_batch(workspace=workspace, items=items)
    assert not result.duplicates
    return [str(outcome.id) for outcome in sorted(result.inserted, key=lambda outcome: outcome.index)]


def enrich(ids) -> None:
    outcome = records_enrich(record_ids=[str(i) for i in ids])
    assert sorted(outcome.ready) == sorted(str(i) for i in ids)


def at(hours: float) -> str:
    return (T0 + timedelta(hours=hours)).isoformat()


def fact(key: str, text: str, *, entity: str = "maria", hours: float = 0, **content) -> dict:
    item = {"entity": entity, "collection": "facts", "type": "fact", "key": key, "text": text, "occurred_at": at(hours)}
    return _with(item, content)


def event(text: str, *, entity: str = "maria", hours: float = 0, **content) -> dict:
    item = {"entity": entity, "collection": "events", "type": "message", "text": text, "occurred_at": at(hours)}
    return _with(item, content)


def summary(text: str, parents: list[str], *, entity: str = "maria", hours: float = 0, **extra) -> dict:
    return {"entity": entity, "collection": "summaries", "type": "summary", "text": text, "derived_from": parents,
            "occurred_at": at(hours), **extra}


def policy(text: str, *, entity: str = "maria", key: str | None = None, hours: float = 0) -> dict:
    item = {"entity": entity, "collection": "policies", "type": "policy", "text": text, "occurred_at": at(hours)}
    if key is not None:
        item["key"] = key
    return item


def link(src: str, dst: str, rel: str = "works_with", *, entity: str = "graph", hours: float = 0) -> dict:
    return {"entity": entity, "collection": "links", "type": "link", "text": f"{src} {rel} {dst}",
            "content": {"src": src, "dst": dst, "rel": rel}, "occurred_at": at(hours)}


def note(text: str, *, entity: str = "maria", **content) -> dict:
    return _with({"entity": entity, "collection": "notes", "type": "note", "text": text}, content)


def _with(item: dict, content: dict) -> dict:
    scores = {name: content.pop(name) for name in ("importance", "confidence") if name in content}
    if scores:
        item["scores"] = scores
    for name in ("key", "dedupe_key"):
        if name in content:
            item[name] = content.pop(name)
    if content:
        item["content"] = content
    return item


def set_created(record_id: str, hours: float) -> None:
    """Backdate a record's transaction time (ingest stamps the transaction's now())."""
    Record.objects.filter(pk=record_id).update(created_at=T0 + timedelta(hours=hours))


def retrieve(api, body: dict, status: int = 200) -> dict:
    response = api.post("/retrieve", body, format="json")
    assert response.status_code == status, response.json()
    return response.json()


def ids_of(payload: dict, section: str) -> list[str]:
    return [entry["id"] for entry in payload["sections"][section]]


def all_ids(payload: dict) -> set[str]:
    return {entry["id"] for entries in payload["sections"].values() for entry in entries}
