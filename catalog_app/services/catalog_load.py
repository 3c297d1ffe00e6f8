"""Loading a catalog directory into a workspace: validate everything, then write everything
or nothing."""
from __future__ import annotations

from pathlib import Path

from django.db import transaction
from django.db.models import F

from ..catalog.compiler import Compiled, compile_catalog
from ..catalog.runtime import load_stored_catalog
from ..models import Definition, Workspace
from .embedding_index import embedding_space_ensure_index


@transaction.atomic
def catalog_load(*, workspace: Workspace, directory: Path, dry_run: bool = False) -> Compiled:
    """Compile ``directory`` against what ``workspace`` has and, unless ``dry_run``, store it.

    Returns the compiled catalog and its list of changes. Raises ``CatalogInvalid`` listing
    every problem (file, dotted path, code); nothing is written then.
    """
    workspace = Workspace.objects.select_for_update().get(pk=workspace.pk)
    compiled = compile_catalog(Path(directory), load_stored_catalog(workspace))
    if dry_run:
        return compiled
    _write(workspace, compiled)
    return compiled


def _write(workspace: Workspace, compiled: Compiled) -> None:
    changes = [c for c in compiled.changes if c.action != "unchanged"]
    for change in changes:
        if change.action == "deactivate":
            Definition.objects.filter(workspace=workspace, family=change.family, name=change.name,
                                      version=change.version).update(active=False)
    added = []
    for change in changes:
        definition = compiled.catalog.get(change.family, change.name, change.version)
        if change.action == "add":
            added.append(Definition(
                workspace=workspace, family=definition.family, name=definition.name, version=definition.version,
                active=definition.active, body=definition.body, hash=definition.hash,
                contract_hash=definition.contract_hash, source_file=definition.source_file,
                source_text=compiled.sources.get((change.family, change.name, change.version), "")))
        elif change.action == "activate":
            Definition.objects.filter(workspace=workspace, family=change.family, name=change.name,
                                      version=change.version).update(active=True)
    Definition.objects.bulk_create(added)  # one INSERT for the whole catalog
    if changes:
        Workspace.objects.filter(pk=workspace.pk).update(catalog_revision=F("catalog_revision") + 1)
    embedding = compiled.catalog.value("models", "models").embedding
    embedding_space_ensure_index(embedding.space, embedding.dimensions)
