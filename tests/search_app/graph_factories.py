"""Helpers for the graph, graph boost, rerank and combined-search tests over
``fixtures/catalogs/graph``.

Records go through ``record_ingest_batch`` like production writes. Pages and articles have no
required processors, so they are ready at insert; links require the constant ``vetted``
processor, so they stay unready (unprocessed) until ``records_enrich`` runs, which needs no
model. No test using these helpers loads MiniLM or calls a provider, except the scripted
loopback server of the rerank tests.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from catalog_app.services.catalog_load import catalog_load
from catalog_app.services.enrichment import records_enrich
from catalog_app.services.record_ingest import record_ingest_batch

GRAPH_CATALOG = Path(__file__).resolve().parents[2] / "fixtures" / "catalogs" / "graph"


def load_graph_catalog(workspace, directory: Path = GRAPH_CATALOG):
    """Load ``directory`` (default: the graph fixture catalog) into ``workspace``; returns it refreshed."""
    catalog_load(workspace=workspace, directory=directory)
    workspace.refresh_from_db()
    return workspace


def catalog_copy(tmp_path: Path, *, drop: tuple[str, ...] = (), files: dict[str, str] | None = None) -> Path:
    """A copy of the graph catalog without the ``drop`` paths and with extra ``files`` (path -> text)."""
    target = tmp_path / "graph_catalog"
    shutil.copytree(GRAPH_CATALOG, target)
    for relative in drop:
        (target / relative).unlink()
    for relative, text in (files or {}).items():
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        (target / relative).write_text(text)
    return target


def write(workspace, items: list[dict]) -> list[str]:
    """Ingest ``items`` in one batch; returns the inserted ids (strings) in item order."""
    result = record_ingest_batch(workspace=workspace, items=items)
    assert not result.duplicates
    return [str(outcome.id) for outcome in sorted(result.inserted, key=lambda outcome: outcome.index)]


def enrich(ids) -> None:
    """Run the enrichment service (the constant ``vetted`` processor) so links become ready."""
    outcome = records_enrich(record_ids=list(ids))
    assert sorted(outcome.ready) == sorted(str(record_id) for record_id in ids)


def link(src: str, dst: str, rel: str = "uses", *, entity: str = "site", **extra) -> dict:
    """One ``links`` item (an event link unless ``key`` is given)."""
    return {"entity": entity, "collection": "links", "type": "link", "text": f"{src} {rel} {dst}",
            "content": {"src": src, "dst": dst, "rel": rel}, **extra}


def ready_links(workspace, items: list[dict]) -> list[str]:
    """Ingest link items and make them ready; returns their ids in item order."""
    ids = write(workspace, items)
    enrich(ids)
    return ids


def page(key: str, *, entity: str = "site", text: str | None = None, **extra) -> dict:
    return {"entity": entity, "collection": "pages", "type": "page", "key": key, "text": text or f"page {key}",
            **extra}


def article(text: str, *, priority: float | None = None, entity: str = "cust", topic: str | None = None,
            **extra) -> dict:
    item = {"entity": entity, "collection": "articles", "type": "article", "text": text, **extra}
    if topic is not None:
        item["content"] = {"topic": topic}
    if priority is not None:
        item["scores"] = {"priority": priority}
    return item


def post(api, path: str, body: dict, status: int = 200) -> dict:
    response = api.post(path, body, format="json")
    assert response.status_code == status, response.json()
    return response.json()


def search(api, body: dict, status: int = 200) -> dict:
    return post(api, "/search", body, status)


def query_view(api, name: str, parameters: dict, status: int = 200) -> dict:
    return post(api, f"/views/{name}/query", parameters, status)
