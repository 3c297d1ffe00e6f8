"""``python manage.py export --workspace NAME [--entity ENTITY] [--cursor CURSOR] [--output FILE]``:
the workspace (or one entity) as JSON Lines, the same text ``GET /export`` streams, with a
progress bar on standard error (docs/export-import.md)."""
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from catalog_app.models import Workspace
from catalog_app.services.workspace_export import export_count, export_cursor_parse, workspace_export_lines
from memseek_site.errors import ApiError


class Command(BaseCommand):
    help = "Export a workspace (or one entity) as JSON Lines; resumable with --cursor."

    def add_arguments(self, parser):
        parser.add_argument("--workspace", required=True, help="workspace name")
        parser.add_argument("--entity", help="export only this entity's records (with the whole catalog)")
        parser.add_argument("--cursor", help="resume after the line that carried this cursor")
        parser.add_argument("--output", help="file to write (appended to with --cursor; default: standard output)")

    def handle(self, *args, workspace, entity=None, cursor=None, output=None, **options):
        source = Workspace.objects.filter(name=workspace).first()
        if source is None:
            raise CommandError(f"workspace {workspace!r} does not exist")
        try:
            after = export_cursor_parse(cursor) if cursor is not None else None
        except ApiError as error:
            raise CommandError(error.detail) from None
        target = self.stdout if output is None else open(output, "a" if cursor else "w", encoding="utf-8")
        try:
            with tqdm(total=export_count(workspace=source, entity=entity), desc=f"export {source.name}",
                      unit="records", file=self.stderr._out) as bar:
                for line in workspace_export_lines(workspace=source, entity=entity, cursor=after):
                    target.write(line)
                    if line.startswith('{"kind":"record"'):
                        bar.update(1)
        finally:
            if output is not None:
                target.close()
