from django.core.management.base import BaseCommand, CommandError

from catalog_app.auth import hash_key
from catalog_app.management.capabilities_option import add_capabilities_option, parse_capabilities
from catalog_app.models import ApiKey, Workspace
from catalog_app.services.workspaces import api_key_create


class Command(BaseCommand):
    help = "Mint another API key for a workspace, holding the chosen capabilities; print it once."

    def add_arguments(self, parser):
        parser.add_argument("workspace")
        add_capabilities_option(parser)
        parser.add_argument("--label", default="", help="a note shown in the console and admin")

    def handle(self, *args, workspace, capabilities, label, **options):
        found = Workspace.objects.filter(name=workspace).first()
        if found is None:
            raise CommandError(f"no workspace {workspace!r}")
        try:
            key = api_key_create(workspace=found, label=label, capabilities=parse_capabilities(capabilities))
        except ValueError as error:
            raise CommandError(str(error)) from None
        stored = ApiKey.objects.get(key_hash=hash_key(key))
        self.stdout.write(f"Key {stored.pk} (hash {stored.key_hash[:12]}, capabilities "
                          f"{', '.join(stored.capabilities)}) for workspace {workspace} "
                          f"(shown once, store it now):\n{key}")
