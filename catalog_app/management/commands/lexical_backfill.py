"""``python manage.py lexical_backfill [--workspace ID] [--batch N] [--restart]``: build the lexical
index for existing records (``catalog_app.lexical.backfill``), with a progress bar; a restart
continues after the last committed batch."""
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from catalog_app.lexical.backfill import lexical_backfill, lexical_backfill_remaining
from catalog_app.management.workspace_option import workspaces_chosen


class Command(BaseCommand):
    help = "Build the lexical index for existing records; resumable and idempotent."

    def add_arguments(self, parser):
        parser.add_argument("--workspace", type=int, help="workspace id (default: every workspace)")
        parser.add_argument("--batch", type=int, default=1000, help="records per transaction (default 1000)")
        parser.add_argument("--restart", action="store_true", help="start again from the first record")

    def handle(self, *args, workspace=None, batch, restart, **options):
        if batch < 1:
            raise CommandError("--batch must be at least 1")
        for each in workspaces_chosen(workspace):
            remaining = lexical_backfill_remaining(workspace_id=each.pk) if not restart else None
            with tqdm(total=remaining, desc=f"workspace {each.pk} {each.name}", unit="records",
                      file=self.stderr._out, disable=False) as bar:
                added, removed = lexical_backfill(workspace_id=each.pk, batch=batch, progress=bar.update,
                                                  restart=restart)
            self.stdout.write(f"workspace {each.pk} {each.name}: {added} documents added, {removed} removed")
