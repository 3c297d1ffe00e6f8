"""``manage.py stop_database``: stop the embedded PostgreSQL, which keeps running after the server
and every command that started it have exited. Its data stays where it is."""
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import connections

from memseek_site.database import embedded_server_stop


class Command(BaseCommand):
    help = "Stop the embedded PostgreSQL (data under var/pgdata/ stays); with DATABASE_URL set, do nothing."

    def handle(self, *args, **options):
        connections.close_all()
        pgdata = embedded_server_stop(Path(settings.BASE_DIR))
        if pgdata is None:
            self.stdout.write("DATABASE_URL names the database server; Memseek does not stop it.")
            return
        self.stdout.write(f"Embedded PostgreSQL stopped. Its data stays in {pgdata} "
                          "(the next command that needs the database starts it again).")
