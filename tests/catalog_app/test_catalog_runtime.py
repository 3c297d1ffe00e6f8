"""The per-process cache of compiled catalogs: one compile per workspace revision, and never
another workspace's catalog for a reused id (a flush or another database can hand the same id to
a new workspace with the same revision)."""
from datetime import timedelta

from catalog_app.catalog.runtime import catalog_for_workspace
from catalog_app.models import Workspace


def test_a_workspace_compiles_once_per_revision(catalog):
    first = catalog_for_workspace(catalog)
    assert catalog_for_workspace(Workspace.objects.get(pk=catalog.pk)) is first
    catalog.catalog_revision += 1
    assert catalog_for_workspace(catalog) is not first


def test_a_reused_id_with_the_same_revision_is_not_served_the_old_catalog(catalog):
    first = catalog_for_workspace(catalog)
    newcomer = Workspace(pk=catalog.pk, name="newcomer", catalog_revision=catalog.catalog_revision,
                         created_at=catalog.created_at + timedelta(seconds=1))
    assert catalog_for_workspace(newcomer) is not first


def test_a_derived_value_is_built_once_per_revision_and_key(catalog):
    builds = []

    def build():
        builds.append(1)
        return {"built": len(builds)}

    first = catalog_for_workspace(catalog).derived(("probe", 1), build)
    assert catalog_for_workspace(catalog).derived(("probe", 1), build) is first
    assert catalog_for_workspace(catalog).derived(("probe", 2), build) == {"built": 2}
    catalog.catalog_revision += 1
    assert catalog_for_workspace(catalog).derived(("probe", 1), build) == {"built": 3}
