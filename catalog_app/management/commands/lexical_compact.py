"""``python manage.py lexical_compact --workspace ID [--full]``: fold a workspace's logged
posting changes into its lexical index blocks now (``catalog_app.lexical.compaction``) instead of
waiting for the write that enqueues it."""
from django.core.management.base import BaseCommand, CommandError

from catalog_app.lexical.compaction import lexical_compact
from catalog_app.models import Workspace


class Command(BaseCommand):
    help = "Compact a workspace's lexical index blocks (--full rebuilds every block)."

    def add_arguments(self, parser):
        parser.add_argument("--workspace", type=int, required=True, help="workspace id")
        parser.add_argument("--full", action="store_true", help="rebuild every block from the records")

    def handle(self, *args, workspace, full, **options):
        if not Workspace.objects.filter(pk=workspace).exists():
            raise CommandError(f"no workspace with id {workspace}")
        outcomes = lexical_compact(workspace_id=workspace, full=full)
        if outcomes is None:
            raise CommandError(f"another compaction of workspace {workspace} is running", returncode=1)
        for outcome in outcomes:
            self.stdout.write(f"{outcome.analyzer}: {'full' if outcome.full else 'incremental'}, watermark "
                              f"{outcome.watermark}, {outcome.changes} change(s) folded in, "
                              f"{outcome.blocks_written} block(s) written, {outcome.blocks_dropped} dropped")
