"""``python manage.py reembed --runtime RUNTIME [--workspace ID] [--batch N]``: switch each
workspace's vectors to RUNTIME without downtime (``catalog_app.services.reembed``), with a
progress bar; resumable (an interrupted run continues where it stopped) and idempotent."""
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from catalog_app.onnx_encoder import RUNTIMES
from catalog_app.management.workspace_option import workspaces_chosen
from catalog_app.services.reembed import reembed_switch


class Command(BaseCommand):
    help = ("Re-embed every live record with another runtime while searches keep using the old vectors, "
            "then switch the workspace to the new ones in one transaction; resumable.")

    def add_arguments(self, parser):
        parser.add_argument("--runtime", required=True, choices=RUNTIMES, help="the runtime to switch to")
        parser.add_argument("--workspace", type=int, help="workspace id (default: every workspace)")
        parser.add_argument("--batch", type=int, default=256, help="records per transaction (default 256)")

    def handle(self, *args, runtime, workspace=None, batch, **options):
        if batch < 1:
            raise CommandError("--batch must be at least 1")
        for each in workspaces_chosen(workspace):
            with tqdm(desc=f"workspace {each.pk} {each.name}", unit="records", file=self.stderr._out) as bar:
                def progress(done: int, total: int) -> None:
                    bar.total = total
                    bar.n = done
                    bar.refresh()
                try:
                    outcome = reembed_switch(each, runtime, batch=batch, progress=progress)
                except ValueError as error:
                    raise CommandError(f"workspace {each.pk}: {error}") from error
            self.stdout.write(f"workspace {each.pk} {each.name}: {outcome.written} vectors written into "
                              f"{outcome.target_space}; now serving from {outcome.target_space}")
