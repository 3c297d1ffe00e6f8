from django.core.management.base import BaseCommand, CommandError

from catalog_app.services.workspaces import KeyNotFound, api_key_find, api_key_revoke


class Command(BaseCommand):
    help = ("Revoke an API key named by its id or a prefix of its SHA-256 (as create_key and the console show "
            "them); every process refuses it within API_KEY_CACHE_TTL_S seconds.")

    def add_arguments(self, parser):
        parser.add_argument("key", help="the key's id, or at least 8 hex characters of its hash")

    def handle(self, *args, key, **options):
        try:
            found = api_key_find(ref=key)
        except KeyNotFound as error:
            raise CommandError(error.detail) from None
        if api_key_revoke(key=found):
            self.stdout.write(f"Key {found.pk} ({found.key_hash[:12]}) of workspace {found.workspace.name} revoked.")
        else:
            self.stdout.write(f"Key {found.pk} ({found.key_hash[:12]}) was already revoked at "
                              f"{found.revoked_at.isoformat()}.")
