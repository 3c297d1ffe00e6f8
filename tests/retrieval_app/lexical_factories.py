"""Helpers for the ``POST /search/lexical`` tests: a small catalog written to a temporary
directory and request/record builders.

``notes`` (mixed: events and keyed facts, a ``tags`` list field) and ``logs`` (events, no
``tags`` field) have no required processor, so their records are ready at insert and no model
is loaded; ``pending`` requires an embedding processor, and under the ``db`` fixture the
``on_commit`` enrichment hook never fires, so its records stay not ready.
"""
from __future__ import annotations

from pathlib import Path

from catalog_app.services.catalog_load import catalog_load
from catalog_app.services.record_ingest import record_ingest_batch

CATALOG = {
    "collections/notes.yaml": """collections:
  - name: notes
    version: 1
    active: true
    mode: mixed
    schema:
      type: object
      required: [text]
      properties:
        text: {type: string}
        tags: {type: array, items: {type: string}}
    fields:
      tags: {path: content.tags, type: [string], filter: true, project: true}
    search_profile: pg_default
""",
    "collections/logs.yaml": """collections:
  - name: logs
    version: 1
    active: true
    mode: event
    schema:
      type: object
      required: [text]
      properties:
        text: {type: string}
    search_profile: pg_default
""",
    "collections/pending.yaml": """collections:
  - name: pending
    version: 1
    active: true
    mode: event
    schema:
      type: object
      required: [text]
      properties:
        text: {type: string}
    required_processors: [embedding_v1]
    search_profile: pg_default
""",
    "conf/processors.yaml": """processors:
  - name: embedding_v1
    kind: embedding
    input: {collections: [pending]}
""",
}


def load_lexical_catalog(workspace, tmp_path: Path):
    directory = tmp_path / f"lexical_catalog_{workspace.pk}"
    for relative, text in CATALOG.items():
        (directory / relative).parent.mkdir(parents=True, exist_ok=True)
        (directory / relative).write_text(text)
    catalog_load(workspace=workspace, directory=directory)
    workspace.refresh_from_db()
    return workspace


def note(text: str, *, entity: str = "ops", collection: str = "notes", type: str = "note", **extra) -> dict:
    item = {"entity": entity, "collection": collection, "type": type, "text": text}
    tags = extra.pop("tags", None)
    if tags is not None:
        item["content"] = {"tags": tags}
    item.update(extra)
    return item


def write(workspace, items: list[dict]) -> list[str]:
    """Ingest ``items`` in one batch; the ids (strings) in item order."""
    result = record_ingest_batch(workspace=workspace, items=items)
    assert not result.duplicates
    return [str(outcome.id) for outcome in sorted(result.inserted, key=lambda outcome: outcome.index)]


def body(text: str, scope: dict | None = None, **query) -> dict:
    return {"contract_version": 1, "mode": "lexical", "scope": {} if scope is None else scope,
            "query": {"text": text, **query}}


def lexical(api, payload, status: int = 200) -> dict:
    response = api.post("/search/lexical", payload, format="json")
    assert response.status_code == status, response.json()
    return response.json()
