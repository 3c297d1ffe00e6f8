from django.core.management.base import BaseCommand, CommandError

from catalog_app.management.capabilities_option import add_capabilities_option, parse_capabilities
from catalog_app.services.workspaces import WorkspaceExists, workspace_create


class Command(BaseCommand):
    help = "Create a workspace and print its API key once (only its SHA-256 is stored)."

    def add_arguments(self, parser):
        parser.add_argument("name")
        add_capabilities_option(parser)

    def handle(self, *args, name, capabilities, **options):
        try:
            _, key = workspace_create(name=name, capabilities=parse_capabilities(capabilities))
        except (ValueError, WorkspaceExists) as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"Workspace {name} created. Its API key (shown once, store it now):\n{key}")
