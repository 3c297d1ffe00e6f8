"""Bringing the whole cluster up, reporting it, and taking it down.

``cluster_up`` is idempotent: with every host answering it changes nothing; with only API,
worker or balancer hosts down (they keep no state) it restarts just those; with anything else
missing (a crash midway, the database or broker gone, the topology changed) it takes down what is
left and starts the cluster afresh.
Before it makes anything it writes the state file (``<run dir>/state.json``: the topology it is
about to build), so ``cluster_down`` removes everything that run made even when it crashed
midway or the topology file was edited since. ``cluster_down`` removes the union of the state
file's topology and the current one: processes (every process in the cluster's namespaces),
namespaces, veth links, the bridge and its address, and the run directory.
"""
from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import yaml

from . import hosts, network
from .topology import DEFAULT_TOPOLOGY, Host, Topology, TopologyError, load, parse


def state_path(topology: Topology) -> Path:
    return hosts.run_dir(topology) / "state.json"


def cluster_up(topology: Topology, log=print) -> None:
    """Build every host of ``topology`` and wait for each to answer; raises ``RuntimeError``
    (and leaves the state file for ``cluster_down``) when a host does not start."""
    if _all_healthy(topology):
        log(f"cluster {topology.name} is already up")
        return
    broken = _restartable(topology)
    if broken:
        log(f"cluster {topology.name}: restarting {', '.join(host.name for host in broken)}")
        _restart(topology, broken)
        log(f"cluster {topology.name} is up again")
        return
    if state_path(topology).exists() or network.namespaces() & {host.namespace for host in topology.hosts}:
        log(f"cluster {topology.name} is partly up: taking it down first")
        cluster_down(topology, log)
    clash = network.subnet_clash(topology)
    if clash:
        raise RuntimeError(f"subnet {topology.subnet} is already in use on this machine ({clash}); "
                           "choose another in the topology file")
    state = state_path(topology)
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text(json.dumps({"topology": str(topology.source),
                                 "definition": yaml.safe_load(topology.source.read_text())}))
    network.network_create(topology)
    log(f"network: bridge {topology.bridge} ({topology.bridge_address}), {len(topology.hosts)} namespaces")
    hosts.database_start(topology, topology.one("database"))
    if topology.pooler:
        hosts.pooler_start(topology, topology.one("database"))
    hosts.broker_start(topology, topology.one("broker"))
    log("database and broker answer; migrating")
    hosts.migrate(topology)
    for api in topology.of_role("api"):
        hosts.api_start(topology, api)
    for worker in topology.of_role("worker"):
        hosts.worker_start(topology, worker)
    for api in topology.of_role("api"):
        hosts.api_wait(topology, api)
    for worker in topology.of_role("worker"):
        hosts.worker_wait(topology, worker)
    hosts.balancer_start(topology, topology.one("balancer"))
    balancer = topology.one("balancer")
    log(f"cluster {topology.name} is up: http://{balancer.address}:{balancer.port}/")


# Hosts that keep nothing of their own: restarting one loses nothing (the database and broker do keep state).
_STATELESS = ("api", "worker", "balancer")


def _restartable(topology: Topology) -> list[Host] | None:
    """The unhealthy hosts of a cluster this topology built whose network, database and broker
    are intact, when all of them keep no state (so restarting them alone repairs it); else None."""
    state = state_path(topology)
    if not state.exists() or not network.link_exists(topology.bridge):
        return None
    try:
        if json.loads(state.read_text())["definition"] != yaml.safe_load(topology.source.read_text()):
            return None  # the topology changed since: only a rebuild makes it true
    except (ValueError, KeyError, TypeError):
        return None
    rows = {row[0]: row for row in cluster_status(topology)}
    broken = [host for host in topology.hosts if not rows[host.name][-1]]
    if not broken or any(host.role not in _STATELESS or rows[host.name][3] == "absent" for host in broken):
        return None
    return broken


def _restart(topology: Topology, broken: list[Host]) -> None:
    for host in broken:
        network.host_stop(host)  # what is left of it: a wedged process, a worker's orphaned pool
    offsets = {}
    for host in broken:
        if host.role == "api":
            hosts.api_start(topology, host)
        elif host.role == "worker":
            offsets[host.name] = hosts.worker_start(topology, host)
    for host in broken:
        if host.role == "api":
            hosts.api_wait(topology, host)
        elif host.role == "worker":
            hosts.worker_wait(topology, host, offsets[host.name])
    if any(host.role == "balancer" for host in broken):
        hosts.balancer_start(topology, topology.one("balancer"))


def cluster_status(topology: Topology) -> list[tuple[str, str, str, str, bool]]:
    """One row per host: name, role, address, what it answers (or why not), and whether that is healthy."""
    rows = []
    try:
        balanced = hosts.haproxy_servers(topology)
    except OSError:
        balanced = {}
    existing = network.namespaces()
    for host in topology.hosts:
        if host.namespace not in existing:
            answer, healthy = "absent", False
        elif not network.namespace_pids(host.namespace):
            answer, healthy = "no process", False
        else:
            answer, healthy = _answer(topology, host, balanced)
        where = host.address if host.role == "worker" else f"{host.address}:{host.port}"
        rows.append((host.name, host.role, where, answer, healthy))
    return rows


def _answer(topology: Topology, host, balanced: dict) -> tuple[str, bool]:
    if host.role in ("api", "balancer"):
        status = hosts.http_status(f"http://{host.address}:{host.port}/health")
        answer = f"/health {status}" if status else "/health does not answer"
        if host.role == "balancer":
            return answer, status == 200
        state = balanced.get(host.name, "unknown")
        # "UP 1/2": a check failed but the host still serves (a loaded host answering late).
        return f"{answer}, HAProxy: {state}", status == 200 and state.startswith("UP")
    if host.role == "worker":
        return f"{len(network.namespace_pids(host.namespace))} process(es)", True
    accepts = hosts.tcp_open(host.address, host.port)
    answer = "accepts connections" if accepts else "does not accept connections"
    if host.role == "database" and topology.pooler:
        pooled = hosts.tcp_open(host.address, topology.pooler.port)
        answer += f", PgBouncer on :{topology.pooler.port} " + ("accepts them" if pooled else "does not")
        accepts = accepts and pooled
    return answer, accepts


def _all_healthy(topology: Topology, tries: int = 3) -> bool:
    """Whether every host answers, asked up to ``tries`` times two seconds apart (one slow answer
    of a loaded host must not make ``up`` rebuild a running cluster)."""
    if not state_path(topology).exists() or not network.namespaces() & {host.namespace for host in topology.hosts}:
        return False
    for attempt in range(tries):
        if all(row[-1] for row in cluster_status(topology)):
            return True
        if attempt < tries - 1:
            time.sleep(2)
    return False


def cluster_down(topology: Topology, log=print) -> None:
    """Remove everything of ``topology`` and of the topology its state file recorded."""
    built = [topology]
    state = state_path(topology)
    if state.exists():
        try:
            recorded = json.loads(state.read_text())
            built.append(parse(recorded["definition"], Path(recorded["topology"])))
        except (ValueError, KeyError, TypeError) as error:
            log(f"state file unreadable ({error}); removing what the topology file names")
    removed = []
    for each in built:
        removed += [item for item in network.network_remove(each) if item not in removed]
        shutil.rmtree(hosts.run_dir(each), ignore_errors=True)
    log(f"cluster {topology.name} is down" + (f": removed {', '.join(removed)}" if removed else " (nothing was up)"))


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m deploy.cluster", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("up", "status", "down"))
    parser.add_argument("--topology", type=Path, default=DEFAULT_TOPOLOGY, help="the topology file (YAML)")
    options = parser.parse_args(argv)
    try:
        topology = load(options.topology)
    except (OSError, TopologyError) as error:
        print(f"{options.topology}: {error}", file=sys.stderr)
        return 2
    if options.action == "up":
        try:
            cluster_up(topology)
        except (RuntimeError, OSError) as error:
            print(f"cluster {topology.name} did not come up: {error}\n"
                  f"(its logs are in {hosts.run_dir(topology) / 'logs'}; `down` removes what was made)",
                  file=sys.stderr)
            return 1
    elif options.action == "down":
        cluster_down(topology)
    else:
        rows = cluster_status(topology)
        for *cells, _ in rows:
            print("  ".join(f"{cell:<22}" for cell in cells).rstrip())
        return 0 if all(row[-1] for row in rows) else 1
    return 0
