"""``python manage.py workspace_setting WS [NAME [VALUE | --unset]]``: read or set a workspace's
``retrieval.*`` settings and its ``limits.*`` rate limits and quotas.

VALUE is JSON (``2000``, ``true``, ``'{"recency": 0.3}'``); anything that is not JSON is taken as
a string. Without NAME the command prints the effective settings and the stored overrides.
"""
import json

from django.core.management.base import BaseCommand, CommandError

from catalog_app.models import Workspace
from memseek_site.errors import ApiError
from retrieval_app.settings import retrieval_settings
from retrieval_app.workspace_settings import workspace_setting_set, workspace_setting_unset


class Command(BaseCommand):
    help = ("Show or set a workspace's retrieval.* and limits.* settings (VALUE is JSON, e.g. true, 2000, "
            "'{\"recency\": 0.3}').")

    def add_arguments(self, parser):
        parser.add_argument("workspace")
        parser.add_argument("name", nargs="?")
        parser.add_argument("value", nargs="?")
        parser.add_argument("--unset", action="store_true", help="remove the override; the default applies again")

    def handle(self, *args, workspace, name, value, unset, **options):
        try:
            if name is None:
                return self._show(Workspace.objects.get(name=workspace))
            if unset == (value is not None):
                raise CommandError("give either VALUE or --unset")
            if unset:
                stored = workspace_setting_unset(workspace_name=workspace, name=name)
            else:
                stored = workspace_setting_set(workspace_name=workspace, name=name, value=_json(value))
        except Workspace.DoesNotExist:
            raise CommandError(f"no workspace named {workspace!r}") from None
        except KeyError as error:
            raise CommandError(error.args[0]) from None
        except ApiError as error:
            raise CommandError(error.detail) from None
        self.stdout.write(json.dumps(stored, indent=2, sort_keys=True))

    def _show(self, workspace):
        try:
            effective = retrieval_settings(workspace)
        except ApiError as error:
            raise CommandError(error.detail) from None
        values = {name: dict(getattr(effective, name)) if name == "weights" else getattr(effective, name)
                  for name in effective.__slots__}
        self.stdout.write(json.dumps({"effective": values, "stored": workspace.settings or {}}, indent=2,
                                     sort_keys=True))


def _json(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text
