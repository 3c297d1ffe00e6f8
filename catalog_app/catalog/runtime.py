"""The compiled catalog of a workspace, built from its stored definitions and cached per
process by the workspace's ``catalog_revision`` (bumped by every load and activation)."""
from __future__ import annotations

import threading

from .registry import FAMILIES, Catalog, Definition

_cache: dict[int, tuple[int, Catalog]] = {}
_lock = threading.Lock()


def catalog_for_workspace(workspace) -> Catalog:
    """Return the compiled catalog of ``workspace`` (a ``Workspace`` row)."""
    with _lock:
        cached = _cache.get(workspace.pk)
    if cached and cached[0] == workspace.catalog_revision:
        return cached[1]
    catalog = load_stored_catalog(workspace)
    with _lock:
        _cache[workspace.pk] = (workspace.catalog_revision, catalog)
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
