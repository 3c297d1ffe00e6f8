"""The shared body of ``activate_view`` and ``activate_collection``: parse, run
``DefinitionActivation`` (check, then execute), print the result or the refusal."""
from django.core.management.base import BaseCommand, CommandError

from catalog_app.models import Workspace
from catalog_app.services.activation import ActivationRefused, DefinitionActivation


class ActivateCommand(BaseCommand):
    family: str  # set by each command

    def add_arguments(self, parser):
        parser.add_argument("name", help=f"the {self.family} name")
        parser.add_argument("version", type=int, help="the version to make active")
        parser.add_argument("--workspace", required=True)

    def handle(self, *args, name, version, workspace, **options):
        target = Workspace.objects.filter(name=workspace).first()
        if target is None:
            raise CommandError(f"workspace {workspace!r} does not exist; create it with create_workspace")
        activation = DefinitionActivation(workspace=target, family=self.family, name=name, version=version,
                                          actor="cli")
        try:
            activation.check()
            audit = activation.execute()
        except ActivationRefused as refused:
            for issue in refused.issues:
                self.stderr.write(str(issue))
            raise CommandError(f"not activated: {refused.message}") from None
        was = f"@{audit.from_version}" if audit.from_version is not None else "no active version"
        self.stdout.write(f"activated {self.family} {name}@{version} in {workspace} (was {was}); "
                          f"catalog revision {target.catalog_revision}")
