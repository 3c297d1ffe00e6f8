"""``manage.py new_catalog DIR [--force]``: start a catalog with the measured rank default."""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from search_app.catalog_scaffold import catalog_scaffold_write


class Command(BaseCommand):
    help = ("Write a new catalog directory (a notes collection, its embedding processor and the example "
            "catalog's measured conf/rank_default.yaml), ready for load_catalog.")

    def add_arguments(self, parser):
        parser.add_argument("directory", type=Path)
        parser.add_argument("--force", action="store_true",
                            help="write into an existing non-empty directory, replacing the scaffold's files "
                                 "there and keeping every other file")

    def handle(self, *args, directory: Path, force: bool, **options):
        if directory.exists() and not directory.is_dir():
            raise CommandError(f"{directory} exists and is not a directory; name a new or empty directory")
        if directory.is_dir() and any(directory.iterdir()) and not force:
            raise CommandError(f"{directory} is not empty; name a new or empty directory, or pass --force to "
                               "replace the scaffold's files there (other files are kept)")
        for relative in catalog_scaffold_write(directory=directory):
            self.stdout.write(f"wrote {directory / relative}")
        self.stdout.write(f"Load it: python manage.py load_catalog {directory} --workspace NAME")
