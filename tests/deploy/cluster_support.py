"""What the cluster tests share: a topology of their own (its own name and subnet, so a cluster an
operator brought up is never touched, and short time bounds), built by the real command and always
removed; ``manage.py`` and HTTP requests against it from the operator's seat (the bridge)."""
from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from deploy.cluster.hosts import manage
from deploy.cluster.topology import Host, Topology, variant

ROOT = Path(__file__).resolve().parents[2]
# Settings of every API and worker host in the tests; the bounds the tests state come from these.
TEST_ENV = {
    "API_KEY_CACHE_TTL_S": 3,         # a revoked key is refused everywhere within 3 s
    "CELERY_VISIBILITY_TIMEOUT": 20,  # a killed worker's unacknowledged task comes back after 20 s
    "PENDING_RECOVERY_AGE_S": 5,      # ... or sooner: a surviving worker re-enqueues records unready for 5 s
    "PENDING_RECOVERY_INTERVAL_S": 3,
}


def missing_prerequisite() -> str | None:
    """Why this machine cannot build the cluster, or None."""
    if os.geteuid() != 0:
        return "the cluster tests create network namespaces, which needs root"
    for program in ("ip", "haproxy", "redis-server", "setpriv", "pgbouncer"):
        if shutil.which(program, path=os.environ.get("PATH", "") + os.pathsep + "/usr/sbin") is None:
            return f"the cluster tests need {program} (bash .ci/install-system-packages)"
    return None


def cluster_topology(directory: Path) -> Topology:
    """The shipped topology renamed ``mskt`` on 10.231.1.0/24 with ``TEST_ENV``."""
    return variant(directory, name="mskt", subnet="10.231.1.0/24", env=TEST_ENV)


def cluster_command(topology: Topology, action: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "deploy.cluster", action, "--topology", str(topology.source)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)


@dataclass
class Answer:
    status: int
    api_host: str | None  # the X-Memseek-Api-Host HAProxy set (None for a host asked directly)
    body: dict


def call(host: Host, method: str, path: str, key: str | None = None, body=None, timeout: float = 60) -> Answer:
    """One HTTP request to ``host`` (the balancer or one API host) on a new connection."""
    headers = {"Content-Type": "application/json"} if body is not None else {}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    connection = http.client.HTTPConnection(host.address, host.port, timeout=timeout)
    try:
        connection.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
        response = connection.getresponse()
        raw = response.read()
        try:
            parsed = json.loads(raw) if raw else {}
        except ValueError:
            parsed = {"raw": raw[:500].decode(errors="replace")}
        return Answer(response.status, response.getheader("X-Memseek-Api-Host"), parsed)
    finally:
        connection.close()


def workspace_with_key(topology: Topology, name: str) -> str:
    """Create workspace ``name`` with the example catalog; returns its full-access key."""
    key = manage(topology, "create_workspace", name).strip().splitlines()[-1]
    manage(topology, "load_catalog", "fixtures/catalogs/example", "--workspace", name)
    return key


def key_create(topology: Topology, workspace: str) -> tuple[str, str]:
    """A new key of ``workspace``: (its id, the key)."""
    output = manage(topology, "create_key", workspace)
    key_id = re.search(r"Key (\d+) ", output).group(1)
    return key_id, output.strip().splitlines()[-1]


def wait_for(condition, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"timed out after {timeout_s} s waiting for {what}")
