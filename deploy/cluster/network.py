"""The cluster's network: one bridge in this machine's namespace (holding ``bridge_address``, the
operator's seat) and, per host, a network namespace linked to it by a veth pair whose namespace
end is ``eth0`` with the host's address. Everything is made with iproute2 (``ip``) and named from
the topology, so ``network_remove`` finds it again after a crash without any state.

``subnet_clash`` refuses a subnet that any address or route of this machine already touches
(other than the cluster's own bridge), so the cluster never shadows a real network.
"""
from __future__ import annotations

import ipaddress
import json
import os
import signal
import subprocess
import time

from .topology import Host, Topology


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run ``ip ARGS``; raises ``RuntimeError`` with its error output when ``check`` and it fails."""
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done


def namespaces() -> set[str]:
    return {line.split()[0] for line in ip("netns", "list").stdout.splitlines() if line.strip()}


def link_exists(name: str) -> bool:
    return ip("link", "show", "dev", name, check=False).returncode == 0


def subnet_clash(topology: Topology) -> str | None:
    """What on this machine already uses the topology's subnet (an address or a route outside the
    cluster's own bridge), or None when nothing does."""
    subnet = ipaddress.ip_network(topology.subnet)
    for entry in json.loads(ip("-j", "-4", "addr", "show").stdout or "[]"):
        if entry.get("ifname") == topology.bridge:
            continue
        for info in entry.get("addr_info", []):
            network = ipaddress.ip_network(f"{info['local']}/{info['prefixlen']}", strict=False)
            if network.overlaps(subnet):
                return f"address {info['local']}/{info['prefixlen']} on {entry['ifname']}"
    for route in json.loads(ip("-j", "-4", "route", "show", "table", "all").stdout or "[]"):
        if route.get("dev") == topology.bridge or route.get("dst") in (None, "default"):
            continue
        try:
            network = ipaddress.ip_network(route["dst"], strict=False)
        except ValueError:
            continue
        if network.overlaps(subnet) and route.get("type", "unicast") in ("unicast", "blackhole"):
            return f"route {route['dst']} via {route.get('dev', '?')}"
    return None


def network_create(topology: Topology) -> None:
    """Make the bridge and every host's namespace and link that do not exist yet (idempotent)."""
    if not link_exists(topology.bridge):
        ip("link", "add", topology.bridge, "type", "bridge")
        ip("addr", "add", f"{topology.bridge_address}/{topology.prefix_length}", "dev", topology.bridge)
    ip("link", "set", topology.bridge, "up")
    existing = namespaces()
    for host in topology.hosts:
        if host.namespace not in existing:
            ip("netns", "add", host.namespace)
        ip("-n", host.namespace, "link", "set", "lo", "up")
        if not link_exists(host.veth):
            ip("link", "add", host.veth, "type", "veth", "peer", "name", "eth0", "netns", host.namespace)
            ip("link", "set", host.veth, "master", topology.bridge)
            ip("-n", host.namespace, "addr", "add", f"{host.address}/{topology.prefix_length}", "dev", "eth0")
        ip("link", "set", host.veth, "up")
        ip("-n", host.namespace, "link", "set", "eth0", "up")


def namespace_pids(namespace: str) -> list[int]:
    """Every process inside ``namespace`` (``ip netns pids``); none when it does not exist."""
    done = ip("netns", "pids", namespace, check=False)
    return [int(word) for word in done.stdout.split() if word.isdigit()] if done.returncode == 0 else []


def host_kill(host: Host, sig: int = signal.SIGKILL) -> list[int]:
    """Send ``sig`` to every process of ``host`` at once (a host losing power, for SIGKILL);
    returns their pids. Only processes inside the host's own namespace are ever signalled."""
    pids = namespace_pids(host.namespace)
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
    return pids


def host_stop(host: Host, grace_s: float = 10) -> None:
    """SIGTERM every process of ``host``, then SIGKILL what is left after ``grace_s``."""
    if not host_kill(host, signal.SIGTERM):
        return
    deadline = time.monotonic() + grace_s
    while namespace_pids(host.namespace) and time.monotonic() < deadline:
        time.sleep(0.2)
    host_kill(host, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while namespace_pids(host.namespace) and time.monotonic() < deadline:
        time.sleep(0.1)


def network_remove(topology: Topology) -> list[str]:
    """Stop every process in the cluster's namespaces, delete the namespaces (their veth pairs go
    with them) and the bridge (its address goes with it). Returns what it removed."""
    removed = []
    existing = namespaces()
    # Clients before servers: the balancer and API hosts, the workers, then the broker and database.
    order = ("balancer", "api", "worker", "broker", "database")
    for host in sorted(topology.hosts, key=lambda each: order.index(each.role)):
        if host.namespace in existing:
            host_stop(host)
            ip("netns", "del", host.namespace)
            removed.append(f"namespace {host.namespace}")
        # A link left behind by a crash between its two steps (a namespace's own link goes with
        # the namespace, a moment later: a failed delete means it has just gone).
        if link_exists(host.veth) and ip("link", "del", host.veth, check=False).returncode == 0:
            removed.append(f"link {host.veth}")
    if link_exists(topology.bridge):
        ip("link", "del", topology.bridge)
        removed.append(f"bridge {topology.bridge} ({topology.bridge_address})")
    return removed
