"""The database going away is a 503 ``database_unavailable`` with ``Retry-After`` on every route
(never a 500), and the service answers again by itself once the database is back: gunicorn on a
private embedded PostgreSQL of its own, stopped and started under it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from bench.processes import Server
from bench.soak_stack import PrivatePostgres

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
    server = PrivatePostgres("database-down")
    try:
        env = {**os.environ, "DATABASE_URL": server.url}
        env.pop("CELERY_BROKER_URL", None)
        subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True,
                       timeout=300)
        created = subprocess.run([sys.executable, "manage.py", "create_workspace", "down-co"], cwd=ROOT, env=env,
                                 check=True, capture_output=True, text=True, timeout=120)
        key = created.stdout.split()[-1]
        subprocess.run([sys.executable, "manage.py", "load_catalog", str(ROOT / "fixtures" / "catalogs" / "example"),
                        "--workspace", "down-co"], cwd=ROOT, env=env, check=True, capture_output=True, timeout=120)
        yield server, server.url, key
    finally:
        server.destroy()


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
        server.stop()
        for method, path, body in ROUTES:
            status, headers, envelope = _call(api.port, method, path, body, key)
            assert (status, envelope["error"]) == (503, "database_unavailable"), (path, status, envelope)
            assert int(headers["Retry-After"]) > 0
        status, _, health = _call(api.port, "GET", "/health", None, key)
        assert (status, health) == (503, {"ok": False, "db": False})
        server.start()
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
