"""The cluster's topology: one declarative YAML file (``topology.yaml``) read into frozen values.

Every name, address and port of the cluster comes from here; ``load`` rejects a file that would
make the cluster reach outside itself (an address outside ``subnet``, two hosts on one address)
or that lacks a host of a role the cluster needs, naming the offending key by its dotted path.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path

import yaml

DEFAULT_TOPOLOGY = Path(__file__).resolve().parent / "topology.yaml"
ROLES = ("balancer", "api", "database", "broker", "worker")
# How many hosts of each role the cluster runs: (fewest, most).
ROLE_COUNTS = {"balancer": (1, 1), "api": (1, 8), "database": (1, 1), "broker": (1, 1), "worker": (1, 8)}
_HOST_KEYS = {"name", "role", "address", "port", "processes", "queues"}
_TOP_KEYS = {"name", "subnet", "bridge_address", "database_name", "balancer", "pooler", "hosts", "env"}
_BALANCER_KEYS = {"check_interval_ms", "fall", "rise"}
_POOLER_KEYS = {"port", "pool_size"}
_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789")


class TopologyError(ValueError):
    """A topology file that cannot describe a cluster; ``path`` is the dotted path of the bad value."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}")
        self.path = path


@dataclass(frozen=True, slots=True)
class Host:
    name: str
    role: str
    address: str
    port: int
    processes: int
    queues: tuple[str, ...]
    namespace: str  # the Linux network namespace that is this host
    veth: str  # the bridge side of its link (the namespace side is eth0)


@dataclass(frozen=True, slots=True)
class Balancer:
    check_interval_ms: int
    fall: int
    rise: int

    @property
    def check_timeout_ms(self) -> int:
        """How long one check waits for ``/health`` (two intervals: a loaded host answers late)."""
        return 2 * self.check_interval_ms

    @property
    def removal_bound_s(self) -> float:
        """Longest time from an API host's death to HAProxy taking it out: ``fall`` failed
        checks, each starting at most one interval after the previous one ended and failing
        within its timeout (a dead host refuses the connection at once, so it is usually
        ``fall`` intervals)."""
        return self.fall * (self.check_interval_ms + self.check_timeout_ms) / 1000


@dataclass(frozen=True, slots=True)
class Pooler:
    """PgBouncer in transaction mode on the database host's address: the API and worker hosts
    reach the database through it, migrations and admin commands directly."""
    port: int
    pool_size: int  # server sessions at most per database and user


@dataclass(frozen=True, slots=True)
class Topology:
    name: str
    subnet: str
    bridge: str  # the bridge device's name
    bridge_address: str
    database_name: str
    balancer: Balancer
    pooler: Pooler | None  # None: the API and worker hosts connect to PostgreSQL directly
    hosts: tuple[Host, ...]
    env: tuple[tuple[str, str], ...]
    source: Path

    def of_role(self, role: str) -> tuple[Host, ...]:
        return tuple(host for host in self.hosts if host.role == role)

    def one(self, role: str) -> Host:
        return self.of_role(role)[0]

    def host(self, name: str) -> Host:
        for host in self.hosts:
            if host.name == name:
                return host
        raise KeyError(name)

    @property
    def prefix_length(self) -> int:
        return ipaddress.ip_network(self.subnet).prefixlen


def load(path: Path = DEFAULT_TOPOLOGY) -> Topology:
    """Read and check the topology at ``path``; raises ``TopologyError``."""
    try:
        data = yaml.safe_load(Path(path).read_text())
    except yaml.YAMLError as error:
        raise TopologyError("", f"not YAML: {error}") from None
    return parse(data, Path(path))


def variant(directory: Path, *, name: str, subnet: str, env: dict | None = None,
            source: Path = DEFAULT_TOPOLOGY) -> Topology:
    """The topology at ``source`` renamed ``name`` and moved to ``subnet`` (each address keeps its
    offset in the subnet), with ``env`` over its own; written to ``directory/topology.yaml`` and
    loaded. The tests and the benchmark build clusters of their own this way, never touching one
    an operator brought up."""
    data = yaml.safe_load(Path(source).read_text())
    old, new = ipaddress.ip_network(data["subnet"]), ipaddress.ip_network(subnet)

    def move(address: str) -> str:
        return str(new.network_address + (int(ipaddress.ip_address(address)) - int(old.network_address)))

    data["name"], data["subnet"], data["bridge_address"] = name, subnet, move(data["bridge_address"])
    for host in data["hosts"]:
        host["address"] = move(host["address"])
    data["env"] = {**(data.get("env") or {}), **(env or {})}
    path = Path(directory) / "topology.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return load(path)


def parse(data, source: Path) -> Topology:
    _mapping(data, "", _TOP_KEYS, required=_TOP_KEYS - {"env", "pooler"})
    name = _name(data["name"], "name", 5)
    try:
        subnet = ipaddress.ip_network(str(data["subnet"]))
    except ValueError as error:
        raise TopologyError("subnet", str(error)) from None
    if subnet.version != 4 or not subnet.is_private:
        raise TopologyError("subnet", "must be a private IPv4 network")
    used = {_address(data["bridge_address"], "bridge_address", subnet)}
    balancer = data["balancer"]
    _mapping(balancer, "balancer", _BALANCER_KEYS, required=_BALANCER_KEYS)
    checks = Balancer(*(_count(balancer[key], f"balancer.{key}", 1, 60_000)
                        for key in ("check_interval_ms", "fall", "rise")))
    if not isinstance(data["hosts"], list):
        raise TopologyError("hosts", "must be a list")
    hosts = []
    for index, item in enumerate(data["hosts"]):
        where = f"hosts.{index}"
        _mapping(item, where, _HOST_KEYS, required={"name", "role", "address"})
        host_name = _name(item["name"], f"{where}.name", 8)
        if item["role"] not in ROLES:
            raise TopologyError(f"{where}.role", f"must be one of {', '.join(ROLES)}")
        address = _address(item["address"], f"{where}.address", subnet)
        if address in used:
            raise TopologyError(f"{where}.address", f"{address} is already taken")
        used.add(address)
        if any(host.name == host_name for host in hosts):
            raise TopologyError(f"{where}.name", f"two hosts are named {host_name}")
        queues = item.get("queues", [])
        if not isinstance(queues, list) or not all(isinstance(q, str) and q for q in queues):
            raise TopologyError(f"{where}.queues", "must be a list of queue names")
        hosts.append(Host(host_name, item["role"], address, _count(item.get("port", 8000), f"{where}.port", 1, 65535),
                          _count(item.get("processes", 1), f"{where}.processes", 1, 16), tuple(queues),
                          namespace=f"{name}-{host_name}", veth=f"{name}v-{host_name}"))
    for role, (fewest, most) in ROLE_COUNTS.items():
        count = sum(host.role == role for host in hosts)
        if not fewest <= count <= most:
            raise TopologyError("hosts", f"needs {fewest} to {most} host(s) of role {role}, has {count}")
    pooler = _pooler(data.get("pooler"), next(host for host in hosts if host.role == "database"))
    env = data.get("env") or {}
    _mapping(env, "env", set(env) if isinstance(env, dict) else set(), required=set())
    for key, value in env.items():
        if not isinstance(key, str) or not key.isidentifier() or not isinstance(value, (str, int, float)):
            raise TopologyError(f"env.{key}", "must be NAME: value (a string or a number)")
    return Topology(name, str(subnet), f"{name}-br0", str(data["bridge_address"]),
                    _name(data["database_name"], "database_name", 32), checks, pooler, tuple(hosts),
                    tuple((key, str(value)) for key, value in env.items()), source)


def _pooler(value, database: Host) -> Pooler | None:
    if value is None:
        return None
    _mapping(value, "pooler", _POOLER_KEYS, required=_POOLER_KEYS)
    pooler = Pooler(_count(value["port"], "pooler.port", 1, 65535),
                    _count(value["pool_size"], "pooler.pool_size", 1, 250))
    if pooler.port == database.port:
        raise TopologyError("pooler.port", f"{pooler.port} is the database's own port on {database.address}")
    return pooler


def _mapping(value, path: str, allowed: set, required: set) -> None:
    if not isinstance(value, dict):
        raise TopologyError(path, "must be a mapping")
    for key in value:
        if key not in allowed:
            raise TopologyError(f"{path}.{key}".lstrip("."), "is not a known key")
    for key in sorted(required - set(value)):
        raise TopologyError(f"{path}.{key}".lstrip("."), "is required")


def _name(value, path: str, longest: int) -> str:
    # Interface names hold 15 bytes: "<name>v-<host>" must fit, so both parts are short.
    if not isinstance(value, str) or not value or len(value) > longest or not set(value) <= _NAME_CHARS \
            or not value[0].isalpha():
        raise TopologyError(path, f"must be 1 to {longest} lower-case letters and digits, starting with a letter")
    return value


def _address(value, path: str, subnet) -> str:
    try:
        address = ipaddress.ip_address(str(value))
    except ValueError:
        raise TopologyError(path, f"{value!r} is not an IPv4 address") from None
    if address not in subnet or address in (subnet.network_address, subnet.broadcast_address):
        raise TopologyError(path, f"{address} is not a host address of {subnet}")
    return str(address)


def _count(value, path: str, lowest: int, highest: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lowest <= value <= highest:
        raise TopologyError(path, f"must be a whole number from {lowest} to {highest}")
    return value
