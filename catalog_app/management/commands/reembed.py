"""``python manage.py reembed --runtime RUNTIME [--from RUNTIME] [--workspace ID] [--batch N]``:
give every live record embedded by the ``--from`` runtime (default: ``EMBEDDING_RUNTIME``) a
vector embedded by RUNTIME too
(``catalog_app.services.reembed``), with a progress bar; resumable and idempotent."""
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from catalog_app.onnx_encoder import RUNTIMES
from catalog_app.management.workspace_option import workspaces_chosen
from catalog_app.services.reembed import reembed, reembed_plan, reembed_remaining


class Command(BaseCommand):
    help = "Fill the embedding space of another runtime for existing records; resumable and idempotent."

    def add_arguments(self, parser):
        parser.add_argument("--runtime", required=True, choices=RUNTIMES, help="the runtime to embed with")
        parser.add_argument("--from", dest="source_runtime", choices=RUNTIMES,
                            help="the runtime whose vectors to start from (default: EMBEDDING_RUNTIME)")
        parser.add_argument("--workspace", type=int, help="workspace id (default: every workspace)")
        parser.add_argument("--batch", type=int, default=256, help="records per transaction (default 256)")

    def handle(self, *args, runtime, source_runtime=None, workspace=None, batch, **options):
        if batch < 1:
            raise CommandError("--batch must be at least 1")
        for each in workspaces_chosen(workspace):
            try:
                source, target = reembed_plan(each, runtime, source_runtime)
            except ValueError as error:
                raise CommandError(f"workspace {each.pk}: {error}") from error
            remaining = reembed_remaining(workspace_id=each.pk, source_space=source, target_space=target.space)
            with tqdm(total=remaining, desc=f"workspace {each.pk} {each.name}", unit="records",
                      file=self.stderr._out) as bar:
                written = reembed(workspace_id=each.pk, source_space=source, target=target, batch=batch,
                                  progress=bar.update)
            self.stdout.write(f"workspace {each.pk} {each.name}: {written} vectors written into {target.space}")
