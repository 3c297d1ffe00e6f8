"""``python manage.py lexical_check --workspace ID``: verify the lexical index against the records
(``catalog_app.lexical.check``); prints every difference and exits non-zero when there is any."""
from django.core.management.base import BaseCommand, CommandError

from catalog_app.lexical.check import lexical_check
from catalog_app.models import Workspace


class Command(BaseCommand):
    help = "Verify a workspace's lexical index against its records; exit status 1 on any difference."

    def add_arguments(self, parser):
        parser.add_argument("--workspace", type=int, required=True, help="workspace id")

    def handle(self, *args, workspace, **options):
        if not Workspace.objects.filter(pk=workspace).exists():
            raise CommandError(f"no workspace with id {workspace}")
        differences = lexical_check(workspace_id=workspace)
        for line in differences:
            self.stdout.write(line)
        if differences:
            raise CommandError(f"{len(differences)} difference(s) between the lexical index and the records "
                               f"of workspace {workspace}; `python manage.py lexical_backfill --workspace "
                               f"{workspace} --restart` rebuilds it", returncode=1)
        self.stdout.write(f"workspace {workspace}: the lexical index agrees with its records")
