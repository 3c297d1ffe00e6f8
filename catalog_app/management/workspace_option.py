"""The ``--workspace ID`` option the index commands share: one workspace, or every one."""
from django.core.management.base import CommandError

from catalog_app.models import Workspace


def workspaces_chosen(workspace: int | None):
    """The workspaces a command runs over, by id: the one ``workspace`` names, or every one.
    Raises ``CommandError`` for an id no workspace has."""
    workspaces = Workspace.objects.order_by("pk")
    if workspace is not None:
        workspaces = workspaces.filter(pk=workspace)
        if not workspaces.exists():
            raise CommandError(f"no workspace with id {workspace}")
    return workspaces
