"""``down`` removes everything a crashed ``up`` made, and ``up`` refuses a subnet this machine
already uses before it makes anything."""
from __future__ import annotations

from pathlib import Path
import shutil
import signal
import subprocess
import sys

import pytest

from deploy.cluster import hosts, network
from deploy.cluster.control import cluster_up, state_path
from deploy.cluster.topology import variant
from tests.deploy.cluster_support import ROOT, cluster_command, missing_prerequisite, wait_for


def test_up_refuses_a_subnet_in_use_before_making_anything(tmp_path):
    if shutil.which("ip") is None:
        pytest.skip("needs iproute2's ip (bash .ci/install-system-packages)")
    topology = variant(tmp_path, name="mskx", subnet="127.0.0.0/24")  # the loopback network every machine has
    with pytest.raises(RuntimeError, match="already in use"):
        cluster_up(topology, log=lambda line: None)
    assert not state_path(topology).exists()
    assert not network.namespaces() & {host.namespace for host in topology.hosts}
    assert not network.link_exists(topology.bridge)


def _running(pid: int) -> bool:
    """Whether ``pid`` is a process that has not exited. An exited one whose parent died with the
    crashed ``up`` waits as a zombie until the machine's init reaps it; ``down`` cannot reap what
    it did not start, and a zombie holds no address, port or file."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


@pytest.mark.cluster
def test_down_removes_everything_a_crashed_up_made(tmp_path):
    reason = missing_prerequisite()
    if reason:
        pytest.skip(reason)
    topology = variant(tmp_path, name="mskc", subnet="10.231.2.0/24")
    database = topology.one("database")
    up = subprocess.Popen([sys.executable, "-m", "deploy.cluster", "up", "--topology", str(topology.source)],
                          cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # Crash it once the database host runs: the network and a server exist, the rest does not.
        wait_for(lambda: network.namespace_pids(database.namespace) and hosts.tcp_open(database.address,
                                                                                       database.port),
                 120, "the crashing up to start the database host")
        up.send_signal(signal.SIGKILL)
        up.wait(30)
        assert state_path(topology).exists()
        assert network.link_exists(topology.bridge)
        survivors = network.namespace_pids(database.namespace)
        assert survivors, "the database host's server died with the command that started it"
    finally:
        if up.poll() is None:
            up.kill()
        down = cluster_command(topology, "down")
    assert down.returncode == 0, down.stderr
    assert not network.namespaces() & {host.namespace for host in topology.hosts}
    assert not network.link_exists(topology.bridge)
    assert not any(network.link_exists(host.veth) for host in topology.hosts)
    assert not hosts.run_dir(topology).exists()
    assert not [pid for pid in survivors if _running(pid)]
    # A second down finds nothing and succeeds.
    again = cluster_command(topology, "down")
    assert again.returncode == 0 and "nothing was up" in again.stdout
