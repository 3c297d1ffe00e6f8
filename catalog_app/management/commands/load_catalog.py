from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from catalog_app.catalog.errors import CatalogInvalid
from catalog_app.catalog.registry import builtin_default_warnings
from catalog_app.models import Workspace
from catalog_app.services.catalog_load import catalog_load


class Command(BaseCommand):
    help = "Validate a catalog directory and load it into a workspace (nothing is written on any error)."

    def add_arguments(self, parser):
        parser.add_argument("directory", type=Path)
        parser.add_argument("--workspace", required=True)
        parser.add_argument("--dry-run", action="store_true", help="validate and show the plan; write nothing")

    def handle(self, *args, directory, workspace, dry_run, **options):
        target = Workspace.objects.filter(name=workspace).first()
        if target is None:
            raise CommandError(f"workspace {workspace!r} does not exist; create it with create_workspace")
        try:
            compiled = catalog_load(workspace=target, directory=directory, dry_run=dry_run)
        except CatalogInvalid as invalid:
            for issue in invalid.issues:
                self.stderr.write(str(issue))
            raise CommandError(f"catalog not loaded: {len(invalid.issues)} problem(s)") from None
        for change in compiled.changes:
            self.stdout.write(f"{change.action:>10}  {change.family} {change.name}@{change.version}")
        verb = "would load" if dry_run else "loaded"
        self.stdout.write(f"{verb} {len(compiled.changes)} definition(s) into {workspace}")
        for warning in builtin_default_warnings(compiled.catalog):
            self.stderr.write(self.style.WARNING(f"warning: {warning}"))
