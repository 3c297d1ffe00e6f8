"""Faults between Memseek and its PgBouncer (docs/scaling.md, "What each failure does"): gunicorn
with ``DATABASE_POOLER=pgbouncer`` whose ``DATABASE_URL`` names a PgBouncer of the test's own (one
server session, a short ``query_wait_timeout``) in front of a scratch database. A stopped pooler and
a pool whose every server session stays busy are ``503 database_unavailable`` with ``Retry-After``,
never a 500, and the same gunicorn answers again once the pooler is back or a session is free."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest

from bench.processes import Server
from tests.pgbouncer import PgBouncer, available
from tests.pooled_database import server_settings
from tests.scratch_database import scratch_database

pytestmark = [pytest.mark.pooler,
              pytest.mark.skipif(not available(), reason="needs the pgbouncer executable (Debian package pgbouncer; "
                                                         ".ci/run installs it)")]

ROOT = Path(__file__).resolve().parents[2]
QUERY_WAIT_TIMEOUT_S = 3
ROUTES = [("GET", "/timeline?entity=contact.maria", None), ("GET", "/collections", None),
          ("POST", "/search", {"q": "budget", "mode": "text"}),
          ("GET", "/records/00000000-0000-4000-8000-000000000000", None)]


@pytest.fixture
def service():
    """``(pooler, gunicorn, key, database)``: a workspace with the example catalog in a scratch
    database, migrated, written and served through the pooler."""
    with scratch_database("pooler_faults") as environment:
        database = urlparse(environment["DATABASE_URL"]).path.lstrip("/")
        server = server_settings()
        pooler = PgBouncer(server_host=server["HOST"] or "127.0.0.1", server_port=int(server["PORT"] or 5432),
                           user=server["USER"], pool_size=1, query_wait_timeout_s=QUERY_WAIT_TIMEOUT_S).start()
        api = None
        try:
            environment.update(DATABASE_URL=f"postgresql://{server['USER']}:@127.0.0.1:{pooler.port}/{database}",
                               DATABASE_POOLER="pgbouncer", TOUCH_ON_READ="false")
            migrated = subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], check=False, cwd=ROOT,
                                      env=environment, capture_output=True, text=True, timeout=600)
            assert migrated.returncode == 0, migrated.stderr[-3000:]
            created = subprocess.run([sys.executable, "manage.py", "create_workspace", "pool-co"], check=False,
                                     cwd=ROOT, env=environment, capture_output=True, text=True, timeout=300)
            assert created.returncode == 0, created.stderr[-3000:]
            key = created.stdout.split()[-1]
            example = ROOT / "fixtures" / "catalogs" / "example"
            subprocess.run([sys.executable, "manage.py", "load_catalog", str(example),
                            "--workspace", "pool-co"], cwd=ROOT, env=environment, check=True, capture_output=True,
                           timeout=300)
            api = Server(workers=1, env=environment)
            yield pooler, api, key, database
        finally:
            if api is not None:
                api.stop()
            pooler.stop()


def _call(api: Server, method: str, path: str, body, key: str) -> tuple[int, dict]:
    status, payload = api.request(method, path, None if body is None else json.dumps(body).encode(), key=key)
    return status, json.loads(payload or b"null")


def _all_unavailable(api: Server, key: str) -> None:
    for method, path, body in ROUTES:
        status, envelope = _call(api, method, path, body, key)
        assert (status, envelope["error"]) == (503, "database_unavailable"), (path, status, envelope)


def _all_answer(api: Server, key: str) -> None:
    for method, path, body in ROUTES:
        status, envelope = _call(api, method, path, body, key)
        assert status < 500, (path, status, envelope)


def test_a_stopped_pooler_is_503_and_the_same_gunicorn_answers_once_it_is_back(service):
    pooler, api, key, _ = service
    _all_answer(api, key)
    port = pooler.port
    pooler.stop(keep_directory=True)
    _all_unavailable(api, key)
    assert _call(api, "GET", "/health", None, key) == (503, {"ok": False, "db": False})
    pooler.start(port=port)
    assert pooler.port == port
    _all_answer(api, key)
    assert api.process.poll() is None  # the same gunicorn, never restarted


def test_every_server_session_busy_past_the_wait_timeout_is_503_until_one_is_free(service):
    pooler, api, key, database = service
    _all_answer(api, key)
    holder = pooler.connect(database)  # the pool's one server session, held by an open transaction
    try:
        holder.execute("SELECT 1")
        _all_unavailable(api, key)
    finally:
        holder.rollback()
        holder.close()
    _all_answer(api, key)
    assert api.process.poll() is None
