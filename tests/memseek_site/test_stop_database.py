"""``manage.py stop_database`` stops the embedded PostgreSQL and keeps its data; it never stops a
server named by ``DATABASE_URL``."""
import os
import subprocess
import sys
from pathlib import Path

import psycopg
from django.db import connection

from bench.processes import database_url
from memseek_site.database import _embedded_server_url, embedded_server_stop

ROOT = Path(__file__).resolve().parents[2]


def test_the_embedded_server_stops_and_its_data_stays(tmp_path, monkeypatch):
    monkeypatch.delenv("DATABASE_URL", raising=False)
    url = _embedded_server_url(tmp_path / "var" / "pgdata")  # a server of its own, started as quickstart would
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    pgdata = embedded_server_stop(tmp_path)
    assert pgdata == (tmp_path / "var" / "pgdata").resolve()
    assert not (pgdata / "postmaster.pid").exists()
    assert (pgdata / "PG_VERSION").exists()
    try:
        psycopg.connect(url, connect_timeout=3).close()
        reachable = True
    except psycopg.OperationalError:
        reachable = False
    assert not reachable


def test_with_database_url_the_command_leaves_that_server_running(db):
    env = {**os.environ, "DATABASE_URL": database_url(connection.settings_dict)}
    result = subprocess.run([sys.executable, "manage.py", "stop_database"], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=120, check=True)
    assert "does not stop it" in result.stdout
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)
