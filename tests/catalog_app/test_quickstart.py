"""``manage.py quickstart``: a newcomer's first command migrates a database, loads the example
catalog and sample records, and serves the API with gunicorn."""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import psycopg
import pytest
from django.db import connection

from bench.processes import database_url, free_port
from catalog_app.embedding import torch_threads_per_process
from catalog_app.management.commands.quickstart import gunicorn_argv, gunicorn_environment

ROOT = Path(__file__).resolve().parents[2]


def test_the_api_is_served_by_gunicorn_with_the_given_bind_and_workers():
    argv = gunicorn_argv("127.0.0.1:8123", 3)
    assert argv[:4] == [sys.executable, "-m", "gunicorn", "memseek_site.wsgi"]
    assert argv[argv.index("--bind") + 1] == "127.0.0.1:8123"
    assert argv[argv.index("--workers") + 1] == "3"
    assert "runserver" not in argv


def test_gunicorn_workers_share_the_cores_unless_the_caller_chose_a_thread_count():
    assert gunicorn_environment({"PATH": "/bin"}, 2)["OMP_NUM_THREADS"] == str(torch_threads_per_process(2))
    assert gunicorn_environment({"OMP_NUM_THREADS": "3"}, 2)["OMP_NUM_THREADS"] == "3"
    assert gunicorn_environment({"PATH": "/bin"}, 2)["PRELOAD_EMBEDDING_MODEL"] == "true"
    assert gunicorn_environment({"PRELOAD_EMBEDDING_MODEL": "false"}, 2)["PRELOAD_EMBEDDING_MODEL"] == "false"
    assert torch_threads_per_process(10_000) == 1


@pytest.fixture
def scratch_database(db):
    """A database of its own on the test server (quickstart commits, so it cannot share the
    test database's transaction); dropped afterwards."""
    settings = dict(connection.settings_dict)
    name = f"quickstart_{uuid.uuid4().hex[:12]}"
    admin = {key: value for key, value in (("host", settings["HOST"]), ("port", settings["PORT"]),
                                            ("user", settings["USER"]), ("password", settings["PASSWORD"])) if value}
    with psycopg.connect(dbname="postgres", autocommit=True, **admin) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield database_url({**settings, "NAME": name})
    with psycopg.connect(dbname="postgres", autocommit=True, **admin) as conn:
        conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def _get(url: str, key: str | None = None):
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"} if key else {})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.headers, json.loads(response.read())


@pytest.mark.model
def test_quickstart_prepares_a_fresh_database_and_serves_it_with_gunicorn(scratch_database):
    port = free_port()
    env = {key: value for key, value in os.environ.items() if key != "CELERY_BROKER_URL"}
    env.update(DATABASE_URL=scratch_database, OMP_NUM_THREADS="1")
    process = subprocess.Popen([sys.executable, "manage.py", "quickstart", "--addrport", f"127.0.0.1:{port}",
                                "--workers", "1"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.extend(process.stdout), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 240
        while True:
            assert process.poll() is None, "quickstart exited:\n" + "".join(output)
            assert time.monotonic() < deadline, "quickstart never served /health:\n" + "".join(output)
            try:
                headers, health = _get(f"http://127.0.0.1:{port}/health")
                break
            except OSError:
                time.sleep(0.5)
        assert "gunicorn" in headers["Server"]
        assert (health["ok"], health["db"], health["queues"]) == (True, True, {"broker": "eager"})
        text = "".join(output)
        assert "development server" not in text
        key = re.search(r"API key \(shown once\):\s+(\S+)", text).group(1)
        _, timeline = _get(f"http://127.0.0.1:{port}/timeline?entity=contact.maria", key)
        assert timeline["records"], timeline
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=60)


def test_quickstart_beside_a_busy_address_fails_before_writing_anything(scratch_database):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        env = {key: value for key, value in os.environ.items() if key != "CELERY_BROKER_URL"}
        env.update(DATABASE_URL=scratch_database)
        result = subprocess.run([sys.executable, "manage.py", "quickstart", "--addrport", f"127.0.0.1:{port}"],
                                cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert result.returncode != 0
    assert f"cannot serve on 127.0.0.1:{port}" in result.stderr and "Nothing was changed" in result.stderr
    assert "API key" not in result.stdout
    with psycopg.connect(scratch_database) as conn:  # not even migrated: no key can exist
        tables = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()[0]
    assert tables == 0
