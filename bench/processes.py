"""Child processes the benchmarks start (gunicorn, a Celery worker): starting the service under
test on a free local port, pointing it at the benchmark's database, stopping them cleanly."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def stop_process(process: subprocess.Popen, log, timeout_s: float = 30) -> None:
    """Terminate ``process`` if it still runs (kill it after ``timeout_s``), then close its ``log``."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    log.close()


def database_url(settings_dict: dict) -> str:
    """A ``DATABASE_URL`` for ``settings_dict`` (for the gunicorn subprocess): the same hosts and
    ports (every node of a multi-host one) and the URL's own parameters (``OPTIONS``' strings, such
    as ``target_session_attrs``), so the child reaches the same server this process does."""
    from urllib.parse import quote, urlencode

    user = quote(settings_dict.get("USER") or "", safe="")
    password = quote(settings_dict.get("PASSWORD") or "", safe="")
    host, port = settings_dict.get("HOST") or "", settings_dict.get("PORT") or ""
    auth = f"{user}:{password}@" if user or password else ""
    query = {key: value for key, value in (settings_dict.get("OPTIONS") or {}).items() if isinstance(value, str)}
    name = quote(settings_dict["NAME"], safe="")
    if host.startswith("/"):  # socket directories go in the query: a path cannot stand in the authority
        query = {"host": host, **({"port": port} if port else {}), **query}
        return f"postgresql://{auth}/{name}?{urlencode(query, safe='/,')}"
    hosts, ports = host.split(","), port.split(",")
    if len(ports) == 1:  # libpq: one port serves every host
        ports = ports * len(hosts)
    members = ",".join((f"[{each}]" if ":" in each else each) + (f":{ports[index]}" if ports[index] else "")
                       for index, each in enumerate(hosts))
    return f"postgresql://{auth}{members}/{name}" + (f"?{urlencode(query)}" if query else "")


# ---------------------------------------------------------------------------------------------
# The server under test


def free_port() -> int:
    """A TCP port of 127.0.0.1 that was free a moment ago (for a server about to bind it, or, left
    unbound, one that nothing answers)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    """``gunicorn memseek_site.wsgi`` (sync workers) on a free port of 127.0.0.1, a new
    connection per request (sync workers close every one), safe to call from many client
    threads."""

    def __init__(self, *, workers: int, env: dict, wsgi_module: str = "memseek_site.wsgi",
                 ready_statuses: tuple[int, ...] = (200,)):
        self.port = free_port()
        self.log = tempfile.NamedTemporaryFile(prefix="memseek-bench-search-gunicorn-", suffix=".log", delete=False)
        self.command = [sys.executable, "-m", "gunicorn", wsgi_module, "--bind", f"127.0.0.1:{self.port}",
                        "--workers", str(workers), "--worker-class", "sync", "--timeout", "300",
                        "--backlog", "256", "--log-level", "warning",
                        # As quickstart: the API's own MAX_URL_BYTES answers an over-long URL (414 in the
                        # envelope), not gunicorn's 8,190-byte request-line limit (an HTML page).
                        "--limit-request-line", "0"]
        environment = {**os.environ, **env}
        # As quickstart: the model loads before the worker takes traffic, so the first search's
        # deadline is not spent loading it (a caller may say otherwise).
        environment.setdefault("PRELOAD_EMBEDDING_MODEL", "true")
        self.process = subprocess.Popen(self.command, cwd=ROOT, env=environment, stdout=self.log,
                                        stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 180
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                # /health answers 503 without a primary: a server started for that case says so
                if self.request("GET", "/health")[0] in ready_statuses:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"gunicorn did not answer /health within 180 s:\n{self.log_tail()}")
            time.sleep(0.2)

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(Path(self.log.name).read_text(errors="replace").splitlines()[-lines:])

    def request(self, method: str, path: str, body: bytes | None = None, key: str | None = None,
                timeout: float = 300) -> tuple[int, bytes]:
        """One request on a new connection (gunicorn's sync workers close every connection)."""
        import http.client

        headers = {}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()

    def worker_pids(self) -> list[int]:
        import psutil

        return [child.pid for child in psutil.Process(self.process.pid).children()]

    def stop(self) -> None:
        stop_process(self.process, self.log, timeout_s=30)


class CeleryWorker:
    """``celery -A memseek_site worker`` with ``concurrency`` pool processes on ``broker`` (and
    ``env`` over this process's environment), started and awaited;
    its pool processes share the cores for torch (``catalog_app.signals``)."""

    def __init__(self, broker: str, concurrency: int, env: dict, timeout_s: float = 120):
        self.log = tempfile.NamedTemporaryFile(prefix="memseek-bench-celery-", suffix=".log", delete=False)
        command = [sys.executable, "-m", "celery", "-A", "memseek_site", "worker", "--concurrency", str(concurrency),
                   "--loglevel", "INFO", "--without-gossip", "--without-mingle", "--without-heartbeat"]
        env = {**os.environ, **env, "DJANGO_SETTINGS_MODULE": "memseek_site.settings", "CELERY_BROKER_URL": broker}
        self.process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout_s
        # Ready, and every pool process has loaded the model (catalog_app.signals), so no
        # measured task pays for a load.
        while not self._started(concurrency):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the Celery worker did not start:\n" + Path(self.log.name).read_text()[-3000:])
            time.sleep(0.2)

    def kill(self) -> None:
        """SIGKILL the worker's main process and every pool process at once (no warm shutdown)."""
        import psutil

        try:
            family = [psutil.Process(self.process.pid)]
            family += family[0].children(recursive=True)
        except psutil.NoSuchProcess:
            family = []
        for member in family:
            try:
                member.kill()
            except psutil.NoSuchProcess:
                pass
        self.process.wait(30)
        self.log.close()

    def _started(self, concurrency: int) -> bool:
        log = Path(self.log.name).read_text(errors="replace")
        return " ready." in log and log.count("loaded the bundled embedding model") >= concurrency

    def stop(self) -> None:
        stop_process(self.process, self.log, timeout_s=30)
