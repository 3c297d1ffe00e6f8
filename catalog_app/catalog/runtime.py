"""The compiled catalog of a workspace, built from its stored definitions and cached per
process by the workspace's ``catalog_revision`` (bumped by every load and activation). The
workspace's ``created_at`` is part of the key: a workspace id can name another workspace after a
flush or in another database (tests, benches), and must never get that one's catalog."""
from __future__ import annotations

import threading

from .registry import FAMILIES, Catalog, Definition

_cache: dict[int, tuple[tuple, Catalog]] = {}
_lock = threading.Lock()


def catalog_for_workspace(workspace) -> Catalog:
    """Return the compiled catalog of ``workspace`` (a ``Workspace`` row)."""
    version = (workspace.catalog_revision, workspace.created_at)
    with _lock:
        cached = _cache.get(workspace.pk)
    if cached and cached[0] == version:
        return cached[1]
    catalog = load_stored_catalog(workspace)
    with _lock:
        _cache[workspace.pk] = (version, catalog)
    return catalog


def load_stored_catalog(workspace) -> Catalog:
    from ..models import Definition as DefinitionRow

    catalog = Catalog()
    rows = DefinitionRow.objects.filter(workspace=workspace).order_by("family", "name", "version")
    for row in rows:
        family = FAMILIES.get(row.family)
        if family is None:
            continue  # a family whose app is not installed in this process
        catalog.add(Definition(row.family, row.name, row.version, row.active, row.body, row.hash,
                               row.contract_hash, row.source_file, family.build(row.body)))
    return catalog
