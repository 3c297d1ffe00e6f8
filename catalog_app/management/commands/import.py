"""``python manage.py import FILE --workspace NAME [--ids preserve|remap] [--seqs preserve|renumber]``:
an export into a workspace in one transaction, as ``POST /import`` does but from a file of any
size, with progress bars on standard error (docs/export-import.md)."""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from catalog_app.models import Workspace
from catalog_app.services.import_lines import import_document_parse
from catalog_app.services.workspace_import import ID_CHOICES, SEQ_CHOICES, workspace_import
from memseek_site.errors import ApiError


class Command(BaseCommand):
    help = "Import an export into a workspace, all or nothing; importing the same export twice changes nothing."

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path, help="an export (JSON Lines)")
        parser.add_argument("--workspace", required=True, help="workspace name")
        parser.add_argument("--ids", choices=ID_CHOICES, default="preserve",
                            help="keep record ids, or map them to new ones (default preserve)")
        parser.add_argument("--seqs", choices=SEQ_CHOICES, default="preserve",
                            help="keep record seqs, or number them on from the workspace's last (default preserve)")

    def handle(self, *args, file, workspace, ids, seqs, **options):
        target = Workspace.objects.filter(name=workspace).first()
        if target is None:
            raise CommandError(f"workspace {workspace!r} does not exist; create it with create_workspace")
        if not file.is_file():
            raise CommandError(f"{file} is not a file")
        out = self.stderr._out
        try:
            with file.open("rb") as handle, tqdm(total=file.stat().st_size, desc="read", unit="B", unit_scale=True,
                                                  file=out) as bar:
                document = import_document_parse(_lines(handle, bar))
            with tqdm(total=len(document.records), desc=f"import into {target.name}", unit="records",
                      file=out) as bar:
                result = workspace_import(workspace=target, document=document, ids=ids, seqs=seqs,
                                          progress=bar.update)
        except ApiError as error:
            where = f" (line {error.extra['line']}, {error.path})" if "line" in error.extra else ""
            raise CommandError(f"nothing imported: {error.code}: {error.detail}{where}") from None
        self.stdout.write(f"{result.records_added} records added, {result.records_unchanged} already there; "
                          f"{result.definitions_added} definitions added, {result.definitions_unchanged} already "
                          f"there; {result.vectors_added} vectors added")


def _lines(handle, bar):
    for line in handle:
        bar.update(len(line))
        yield line.rstrip(b"\n")
