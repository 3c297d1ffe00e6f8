"""The cluster's topology file: the shipped one loads, and a file that would make the cluster
reach outside itself, or lacks a host it needs, is refused with the dotted path of the bad value."""
import copy
import shutil

import pytest
import yaml

from deploy.cluster.hosts import haproxy_config, run_dir, service_environment
from deploy.cluster.topology import DEFAULT_TOPOLOGY, TopologyError, load, parse, variant


@pytest.fixture
def shipped() -> dict:
    return yaml.safe_load(DEFAULT_TOPOLOGY.read_text())


def test_shipped_topology_names_every_role_inside_its_subnet():
    topology = load()
    assert {host.role for host in topology.hosts} == {"balancer", "api", "database", "broker", "worker"}
    assert len(topology.of_role("api")) == 2 and len(topology.of_role("worker")) == 2
    assert all(host.namespace.startswith(f"{topology.name}-") for host in topology.hosts)
    assert all(len(host.veth) <= 15 for host in topology.hosts)  # the kernel's interface-name limit


def test_haproxy_config_checks_health_on_every_api_host():
    topology = load()
    config = haproxy_config(topology)
    assert "http-check send meth GET uri /health" in config
    for api in topology.of_role("api"):
        assert f"server {api.name} {api.address}:{api.port} check" in config
    assert "${" not in config


@pytest.fixture
def unbuilt(tmp_path):
    """A topology no test builds (its environment makes the cluster's secret under its run
    directory, removed afterwards)."""
    topology = variant(tmp_path, name="msku", subnet="10.231.9.0/24")
    yield topology
    shutil.rmtree(run_dir(topology), ignore_errors=True)


def test_api_and_worker_hosts_reach_the_database_through_the_pooler_and_admin_commands_directly(unbuilt):
    topology = unbuilt
    database, pooler = topology.one("database"), topology.pooler
    pooled, direct = service_environment(topology), service_environment(topology, pooled=False)
    assert pooled["DATABASE_POOLER"] == "pgbouncer"
    assert f"@{database.address}:{pooler.port}/" in pooled["DATABASE_URL"]
    assert "DATABASE_POOLER" not in direct and f"@{database.address}:{database.port}/" in direct["DATABASE_URL"]


def test_without_a_pooler_every_host_connects_directly(unbuilt):
    data = yaml.safe_load(unbuilt.source.read_text())
    del data["pooler"]
    topology = parse(data, unbuilt.source)
    assert topology.pooler is None
    assert ":5432/" in service_environment(topology)["DATABASE_URL"]
    assert "DATABASE_POOLER" not in service_environment(topology)


def _set(data: dict, dotted: str, value) -> dict:
    changed = copy.deepcopy(data)
    *parents, last = dotted.split(".")
    node = changed
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if value is _DELETE:
        del node[int(last) if isinstance(node, list) else last]
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return changed


_DELETE = object()


@pytest.mark.parametrize("dotted, value, error_path", [
    ("subnet", "8.8.8.0/24", "subnet"),  # a public network: the cluster would shadow real hosts
    ("subnet", "not a network", "subnet"),
    ("bridge_address", "10.9.9.9", "bridge_address"),
    ("hosts.1.address", "192.168.77.5", "hosts.1.address"),  # outside the subnet
    ("hosts.1.address", "10.231.0.10", "hosts.1.address"),  # the balancer's address again
    ("hosts.1.address", "10.231.0.255", "hosts.1.address"),  # the broadcast address
    ("hosts.1.role", "router", "hosts.1.role"),
    ("hosts.1.name", "API 1", "hosts.1.name"),
    ("hosts.1.name", "lb", "hosts.1.name"),  # two hosts of one name
    ("hosts.1.port", 70000, "hosts.1.port"),
    ("hosts.1.processes", True, "hosts.1.processes"),
    ("hosts.5.queues", "enrichment", "hosts.5.queues"),
    ("hosts.1.shell", "rm -rf /", "hosts.1.shell"),  # unknown keys are refused, not ignored
    ("balancer.fall", 0, "balancer.fall"),
    ("name", "a-very-long-name", "name"),
    ("env", {"API KEY": "1"}, "env.API KEY"),
    ("hosts.3", _DELETE, "hosts"),  # no database host
    ("balancer", _DELETE, "balancer"),
    ("pooler.port", 5432, "pooler.port"),  # the database's own port on the same address
    ("pooler.pool_size", 0, "pooler.pool_size"),
    ("pooler.pool_mode", "session", "pooler.pool_mode"),
    ("pooler.port", _DELETE, "pooler.port"),
])
def test_bad_topology_is_refused_at_its_dotted_path(shipped, dotted, value, error_path):
    with pytest.raises(TopologyError) as refused:
        parse(_set(shipped, dotted, value), DEFAULT_TOPOLOGY)
    assert refused.value.path == error_path


def test_a_file_that_is_not_yaml_is_refused(tmp_path):
    path = tmp_path / "topology.yaml"
    path.write_text("hosts: [unclosed\n")
    with pytest.raises(TopologyError):
        load(path)


def test_variant_moves_every_address_to_its_subnet_keeping_offsets(tmp_path):
    moved = variant(tmp_path, name="mskv", subnet="10.231.9.0/24", env={"API_KEY_CACHE_TTL_S": 3})
    shipped = load()
    assert moved.name == "mskv" and moved.bridge_address == "10.231.9.1"
    for before, after in zip(shipped.hosts, moved.hosts):
        assert after.address.split(".")[-1] == before.address.split(".")[-1]
        assert after.address.startswith("10.231.9.") and after.namespace == f"mskv-{before.name}"
    assert ("API_KEY_CACHE_TTL_S", "3") in moved.env


def test_the_command_refuses_a_bad_topology_file_before_touching_anything(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "topology.yaml"
    path.write_text("name: x\nsubnet: 10.231.7.0/24\n")
    done = subprocess.run([sys.executable, "-m", "deploy.cluster", "up", "--topology", str(path)],
                          capture_output=True, text=True, cwd=DEFAULT_TOPOLOGY.parents[2], timeout=60)
    assert done.returncode == 2 and "balancer: is required" in done.stderr
