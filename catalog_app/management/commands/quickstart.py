"""One command from a fresh clone to a running service with data in it: the API is served by
gunicorn, the production server, not Django's development server."""
import json
import os
import socket
import sys
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from catalog_app.embedding import torch_threads_per_process
from catalog_app.models import Workspace
from catalog_app.services.catalog_load import catalog_load
from catalog_app.services.record_ingest import record_ingest_batch
from catalog_app.services.workspaces import api_key_create, workspace_create
from memseek_site.deadline import gunicorn_timeout_s

DEMO_WORKSPACE = "demo"


class Command(BaseCommand):
    help = ("Migrate, create the demo workspace and print its key, load the example catalog, ingest sample "
            "records and start the server on 127.0.0.1:8000 (OpenAPI page at /api/docs/).")

    def add_arguments(self, parser):
        parser.add_argument("--addrport", default="127.0.0.1:8000")
        parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes (default 2)")
        parser.add_argument("--no-serve", action="store_true", help="prepare everything but do not start the server")

    def handle(self, *args, addrport, workers, no_serve, **options):
        if not no_serve:
            refuse_a_busy_address(addrport)
        call_command("migrate", interactive=False, verbosity=0)
        self.stdout.write("Database migrated.")
        workspace = Workspace.objects.filter(name=DEMO_WORKSPACE).first()
        if workspace is None:
            workspace, key = workspace_create(name=DEMO_WORKSPACE)
        else:
            key = api_key_create(workspace=workspace, label="quickstart")
        fixtures = Path(settings.BASE_DIR) / "fixtures"
        compiled = catalog_load(workspace=workspace, directory=fixtures / "catalogs" / "example")
        self.stdout.write(f"Example catalog loaded ({len(compiled.catalog.names('collection'))} collections).")
        samples = json.loads((fixtures / "samples" / "quickstart_records.json").read_text())["records"]
        for record in samples:
            wording = record["text"] if "text" in record else record["key"]
            record.setdefault("dedupe_key", f"quickstart:{record['entity']}:{wording}")
        result = record_ingest_batch(workspace=workspace, items=samples)
        self.stdout.write(f"Sample records: {len(result.inserted)} inserted, {len(result.duplicates)} already there.")
        self.stdout.write(self.style.SUCCESS(
            f"\nWorkspace '{DEMO_WORKSPACE}' API key (shown once):\n  {key}\n\n"
            f"Try:\n  curl -H 'Authorization: Bearer {key}' 'http://{addrport}/timeline?entity=contact.maria'\n"
            f"OpenAPI page: http://{addrport}/api/docs/\n"))
        self.stdout.write(database_note(settings.DATABASES["default"], Path(settings.BASE_DIR)))
        if not no_serve:
            self.stdout.write(f"Starting {workers} gunicorn worker(s); each loads the embedding model before it "
                              "takes requests (about 10-20 s on two cores), then the API answers.")
            self.stdout.flush()
            os.execvpe(sys.executable, gunicorn_argv(addrport, workers), gunicorn_environment(os.environ, workers))


def refuse_a_busy_address(addrport: str) -> None:
    """Raise ``CommandError`` when ``addrport`` (``host:port``) cannot be bound, before anything is
    written: a second quickstart beside a running one must not mint another full-access key."""
    host, _, port = addrport.rpartition(":")
    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host.strip("[]") or "127.0.0.1", int(port)))
    except (OSError, ValueError) as error:
        raise CommandError(f"cannot serve on {addrport} ({error}): is quickstart already running there? "
                           "Stop it, or pass another --addrport HOST:PORT. Nothing was changed.") from None


def database_note(database: dict, base_dir: Path) -> str:
    """One line on where the data lives and, for the embedded server, how to stop it."""
    if os.environ.get("DATABASE_URL", "").strip():
        return f"Database: {database['NAME']} on the server of DATABASE_URL."
    return (f"Database: the embedded PostgreSQL (data in {base_dir / 'var' / 'pgdata'}) keeps running after the "
            "server stops; `python manage.py stop_database` stops it.")


def gunicorn_argv(addrport: str, workers: int) -> list[str]:
    """The command line that serves the API on ``addrport`` (``host:port``) with ``workers``
    sync workers, access log on standard output. gunicorn's own request-line limit is off (its
    maximum, 8,190 bytes, is below ``MAX_URL_BYTES``), so the API's 414 answers an over-long URL.
    Its worker timeout is above the longest request deadline, so a request that runs out of time
    answers ``503 deadline_exceeded`` from a live worker instead of gunicorn killing it."""
    return [sys.executable, "-m", "gunicorn", "memseek_site.wsgi", "--bind", addrport,
            "--workers", str(max(1, workers)), "--access-logfile", "-", "--limit-request-line", "0",
            "--timeout", str(gunicorn_timeout_s())]


def gunicorn_environment(environ, workers: int) -> dict[str, str]:
    """``environ`` with ``OMP_NUM_THREADS`` set to the usable cores divided by ``workers`` unless
    the caller set it (the workers share the cores for the bundled model: docs/operations.md,
    Workers), and ``PRELOAD_EMBEDDING_MODEL`` on unless the caller chose."""
    environment = dict(environ)
    # Each worker loads the model before it takes traffic: the first request is not the one that waits.
    environment.setdefault("PRELOAD_EMBEDDING_MODEL", "true")
    if not environment.get("OMP_NUM_THREADS"):
        environment["OMP_NUM_THREADS"] = str(torch_threads_per_process(workers))
    return environment
