"""Read replicas: which PostgreSQL server serves a request's database work (docs/replicas.md).

``DATABASE_REPLICA_URLS`` adds the aliases ``replica_0``, ``replica_1``, ... beside ``default``
(the primary; ``memseek_site.database.replica_database_settings``). ``ReplicaRouter`` is the one
home of the rule of where reads go:

- a route declares once, beside its capability, how it uses the database: ``database = "read"``
  (its answer only reads) or ``"write"`` (it changes rows; the primary serves it all);
- a read route is served by a replica when ``READ_CONSISTENCY`` is ``read_your_writes`` and a
  replica is healthy (connected, streaming, its replay at most ``REPLICA_MAX_LAG_S`` behind what
  it received) and has replayed the WAL position the read needs: the larger of the consistency
  token the caller sent and its workspace's last write (``consistency``); else by the primary,
  after waiting up to ``REPLICA_WAIT_MS`` for a healthy replica to catch up;
- a write inside a read route (a receipt, the brief's call budget, touch-on-read) runs in
  ``primary_write()``: on the primary, and its position is the response's token. A write that
  forgets to is refused by the standby (PostgreSQL's read-only transaction), never lost quietly.

Raw SQL in this code base uses ``django.db.connection`` (the ``default`` alias), so ``serving``
points this thread's ``default`` at the chosen server's connection for the request; the router
names the same server for the ORM's reads, and writes go to ``default``. A replica that fails is
marked down for ``REPLICA_RETRY_S`` seconds in this process and skipped.

While the primary cannot be reached, ``standby_alias`` names a replica that is still a standby
to serve read routes (``STANDBY_READS``; ``consistency.ReadRoutingMiddleware`` retries there),
under the same read-your-writes rule: it must have replayed the read's position.
"""
from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.core.exceptions import ImproperlyConfigured
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections

from .conf import memseek_setting

REPLICA_PREFIX = "replica_"
DATABASE_ACCESS = ("read", "write")
READ_CONSISTENCIES = ("read_your_writes", "primary")

_local = threading.local()  # .stack: aliases served by this thread, innermost last; .primary
_down_until: dict[str, float] = {}
_rotation = itertools.count()
# Per process: each replica's replay position as last heard while it was healthy, with when it
# was asked (the time before the question, so the position was reached no later than that) and
# which server session answered: (host, port, backend pid). A multi-host URL may reconnect to
# another node, whose position the hearing says nothing about.
_heard: dict[str, tuple[float, int, int, tuple]] = {}  # alias -> (asked at, replay, wal_block_size, session)
_clock = time.monotonic  # the TTL's clock (a test may put a fake one here)

# One query on the replica says everything the choice needs, so a healthy replica costs one round trip.
_STATE_SQL = """
SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()::text, pg_last_wal_receive_lsn()::text,
       COALESCE(EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()), 0)::float8,
       EXISTS (SELECT 1 FROM pg_stat_wal_receiver WHERE status = 'streaming'),
       current_setting('wal_block_size')::int,
       (SELECT wait_event FROM pg_stat_activity WHERE backend_type = 'startup')
"""
_REPLAY_SQL = "SELECT pg_last_wal_replay_lsn()::text, current_setting('wal_block_size')::int, pg_is_in_recovery()"
# The size of a WAL record's header (SizeOfXLogRecord): a page's last bytes fewer than this hold no record.
_RECORD_HEADER_BYTES = 24


def replica_aliases() -> list[str]:
    """The configured replicas' database aliases, in ``DATABASE_REPLICA_URLS`` order."""
    return sorted((alias for alias in connections.settings if alias.startswith(REPLICA_PREFIX)),
                  key=lambda alias: int(alias[len(REPLICA_PREFIX):]))


def replicas_serve_reads() -> bool:
    """Whether read routes may be served by a replica: some are configured and
    ``READ_CONSISTENCY`` is ``read_your_writes`` (``primary`` keeps every read on the primary)."""
    consistency = memseek_setting("READ_CONSISTENCY")
    if consistency not in READ_CONSISTENCIES:
        raise ImproperlyConfigured(f"READ_CONSISTENCY must be one of {', '.join(READ_CONSISTENCIES)}, "
                                   f"not {consistency!r}")
    return consistency == "read_your_writes" and bool(replica_aliases())


def lsn_parse(text: str) -> int:
    """The WAL position PostgreSQL writes as ``X/Y`` (two hexadecimal numbers of at most 8
    digits) as one integer; ``ValueError`` for anything else."""
    high, sep, low = text.partition("/")
    if not sep or not (0 < len(high) <= 8 and 0 < len(low) <= 8):
        raise ValueError(f"not a WAL position: {text!r}")
    try:
        if not all(c in "0123456789abcdefABCDEF" for c in high + low):
            raise ValueError
        return (int(high, 16) << 32) | int(low, 16)
    except ValueError:
        raise ValueError(f"not a WAL position: {text!r}") from None


def replay_reaches(replayed: int, position: int, wal_block_size: int = 8192) -> bool:
    """Whether a standby whose ``pg_last_wal_replay_lsn()`` is ``replayed`` holds everything up
    to ``position`` (a token, or what it received). Replay stops at the end of the last record,
    while the primary's write position (and what a standby received) can be the end of that
    record's WAL page: when the page's rest is too short for a record it holds none, so a replay
    there has reached the page's end."""
    room = wal_block_size - replayed % wal_block_size
    if room < _RECORD_HEADER_BYTES:
        replayed += room
    return replayed >= position


def lsn_format(position: int) -> str:
    """``position`` written as PostgreSQL writes a WAL position (``lsn_parse``'s inverse)."""
    return f"{position >> 32:X}/{position & 0xFFFFFFFF:X}"


# ---------------------------------------------------------------------------------------------
# Which connection this thread's ``default`` means


def current_alias() -> str:
    """The alias serving this thread's database work now (``default`` outside any ``serving``)."""
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else DEFAULT_DB_ALIAS


@contextmanager
def serving(alias: str) -> Iterator[None]:
    """Within it, this thread's ``django.db.connection`` and ``connections["default"]`` are
    ``alias``'s connection (``default``: the primary's, also inside a replica's ``serving``)."""
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    if not stack:
        _local.primary = connections[DEFAULT_DB_ALIAS]
    target = _local.primary if alias == DEFAULT_DB_ALIAS else connections[alias]
    storage = connections._connections  # Django keeps each thread's connections here, by alias
    saved = getattr(storage, DEFAULT_DB_ALIAS, None)
    setattr(storage, DEFAULT_DB_ALIAS, target)
    stack.append(alias)
    try:
        yield
    finally:
        stack.pop()
        if saved is None:
            delattr(storage, DEFAULT_DB_ALIAS)
        else:
            setattr(storage, DEFAULT_DB_ALIAS, saved)
        if not stack:
            _local.primary = None


@contextmanager
def primary_write() -> Iterator[None]:
    """Run a write that a read route makes (a receipt, a counter) on the primary, and make the
    request's response carry the consistency token of it."""
    with serving(DEFAULT_DB_ALIAS):
        yield
    routing = current_routing()
    if routing is not None:
        routing.wrote = True


def carried_to_thread(task: Callable[[], object]) -> Callable[[], object]:
    """``task`` made to run, in whichever thread calls it, on the server (and for the request)
    this thread serves now: how a request's parallel work (``memseek_site.parallel``) follows it."""
    alias, routing = current_alias(), current_routing()
    if alias == DEFAULT_DB_ALIAS and routing is None:
        return task

    def run():
        outer = getattr(_local, "routing", None)
        _local.routing = routing
        try:
            with serving(alias):
                return task()
        finally:
            _local.routing = outer
    return run


# ---------------------------------------------------------------------------------------------
# The rule


@dataclass
class RequestRouting:
    """One API request's routing: the token it presented, where it was served, what it wrote."""

    token: str | None
    alias: str = DEFAULT_DB_ALIAS
    kind: str | None = None  # the route's ``database`` declaration, once known
    workspace_id: object = None
    needed_lsn: int | None = None
    wrote: bool = False
    primary_only: bool = False  # a retry after the replica failed mid-request
    standby: str | None = None  # a retry on this standby after the primary could not be reached
    scope: object = None  # the ``serving`` of a replica, entered for the view, left after it


def current_routing() -> RequestRouting | None:
    """The routing of the API request this thread serves, if any."""
    return getattr(_local, "routing", None)


def set_routing(routing: RequestRouting | None) -> None:
    _local.routing = routing


@dataclass(frozen=True)
class ReplicaState:
    """What one replica said (or that it said nothing: ``reachable`` false)."""

    alias: str
    reachable: bool
    in_recovery: bool = False
    streaming: bool = False
    replay_lsn: int | None = None
    lag_s: float = 0.0
    wal_block_size: int = 8192

    def has_replayed(self, position: int | None) -> bool:
        return position is None or (self.replay_lsn is not None
                                    and replay_reaches(self.replay_lsn, position, self.wal_block_size))

    @property
    def healthy(self) -> bool:
        return (self.reachable and self.in_recovery and self.streaming and self.replay_lsn is not None
                and self.lag_s <= memseek_setting("REPLICA_MAX_LAG_S"))

    def describe(self) -> dict:
        state = ("down" if not self.reachable else "not_standby" if not self.in_recovery
                 else "not_streaming" if not self.streaming
                 else "lagging" if self.lag_s > memseek_setting("REPLICA_MAX_LAG_S") else "ok")
        return {"name": self.alias, "state": state,
                "replay_lsn": lsn_format(self.replay_lsn) if self.replay_lsn is not None else None,
                "lag_s": round(self.lag_s, 3)}


def heard_covers(alias: str, position: int | None) -> bool:
    """Whether ``alias``'s replay position as heard within the last ``REPLICA_STATE_TTL_MS``
    (while it was healthy) already reaches ``position`` (``None``: any fresh hearing does).

    A replay position only grows, so a heard one is a lower bound of the replica's position now:
    covering ``position`` proves the replica holds it without asking. A hearing that does not
    cover it proves nothing (the replica may have replayed further since): the caller asks."""
    heard = _heard.get(alias)
    if heard is None:
        return False
    asked_at, replay_lsn, wal_block_size, session = heard
    if _clock() - asked_at >= memseek_setting("REPLICA_STATE_TTL_MS") / 1000:
        return False
    if not (position is None or replay_reaches(replay_lsn, position, wal_block_size)):
        return False
    # Only the session that answered: the connection's health check (run once a request anyway)
    # comes first, so a reconnection, perhaps to another node, shows as another session.
    try:
        connection = connections[alias]
        connection.close_if_health_check_failed()
        connection.ensure_connection()
        return _session(connection) == session
    except DatabaseError:
        return False


def _session(connection) -> tuple:
    """The server session behind a Django connection: (host, port, backend pid), no round trip."""
    info = connection.connection.info
    return info.host, info.port, info.backend_pid


def forget_heard(alias: str | None = None) -> None:
    """Drop what this process heard of ``alias`` (of every replica: ``None``)."""
    if alias is None:
        _heard.clear()
    else:
        _heard.pop(alias, None)


def replica_state(alias: str) -> ReplicaState:
    """Ask ``alias`` for its state; a failure marks it down for ``REPLICA_RETRY_S`` seconds. A
    healthy answer's replay position is remembered for ``heard_covers``; any other answer
    forgets the replica's last one."""
    if _down_until.get(alias, 0.0) > time.monotonic():
        return ReplicaState(alias, reachable=False)
    connection = connections[alias]
    asked_at = _clock()
    try:
        with connection.cursor() as cursor:
            cursor.execute(_STATE_SQL)
            in_recovery, replay, receive, since_replay_s, streaming, block, startup_waits_on = cursor.fetchone()
    except DatabaseError:
        mark_down(alias)
        return ReplicaState(alias, reachable=False)
    replay_lsn = lsn_parse(replay) if replay else None
    # Waiting for WAL from the primary, the standby has replayed every whole record it received
    # (what it received may end inside a record whose rest the primary has not written yet).
    # Unknown (a role without pg_read_all_stats sees no wait event): compare positions.
    behind = (startup_waits_on != "RecoveryWalStream" and receive is not None and replay_lsn is not None
              and not replay_reaches(replay_lsn, lsn_parse(receive), block))
    # Caught up with everything received: no lag. Behind: the time since the primary committed the
    # last transaction it replayed (PostgreSQL's own replay timestamp).
    state = ReplicaState(alias, True, bool(in_recovery), bool(streaming), replay_lsn,
                         float(since_replay_s) if behind else 0.0, block)
    if state.healthy and replay_lsn is not None:
        _heard[alias] = (asked_at, replay_lsn, block, _session(connection))
    else:
        forget_heard(alias)
    return state


def mark_down(alias: str) -> None:
    """Skip ``alias`` in this process for ``REPLICA_RETRY_S`` seconds; drop its connection."""
    _down_until[alias] = time.monotonic() + memseek_setting("REPLICA_RETRY_S")
    forget_heard(alias)
    try:
        connections[alias].close()
    except DatabaseError:
        pass


def _has_replayed(alias: str, position: int, promoted_counts: bool = False) -> bool:
    """Whether ``alias`` has replayed ``position``; a server no longer in recovery (its replay
    position is then NULL) has not, unless ``promoted_counts``."""
    try:
        with connections[alias].cursor() as cursor:
            cursor.execute(_REPLAY_SQL)
            replay, block, in_recovery = cursor.fetchone()
    except DatabaseError:
        mark_down(alias)
        return False
    if not in_recovery:
        forget_heard(alias)
        return promoted_counts
    return replay is not None and replay_reaches(lsn_parse(replay), position, block)


def _first_to_replay(aliases: list[str], position: int | None, promoted_counts: bool = False) -> str | None:
    """The first of ``aliases`` to replay ``position`` within ``REPLICA_WAIT_MS``, or ``None``."""
    deadline = time.monotonic() + memseek_setting("REPLICA_WAIT_MS") / 1000
    while aliases and position is not None and time.monotonic() < deadline:
        time.sleep(0.002)
        for alias in aliases:
            if _has_replayed(alias, position, promoted_counts):
                return alias
    return None


class ReplicaRouter:
    """Django's database router (``DATABASE_ROUTERS``) and the one home of where reads go."""

    @staticmethod
    def read_alias(needed_lsn: int | None) -> str:
        """The server for a read route's request that must see ``needed_lsn`` (``None``: no
        write to follow): a healthy replica that has replayed it, else ``default``. A replica
        heard healthy within ``REPLICA_STATE_TTL_MS`` at a position that covers ``needed_lsn``
        is chosen without a query; otherwise it is asked (and heard again)."""
        if not replicas_serve_reads():
            return DEFAULT_DB_ALIAS
        aliases = replica_aliases()
        start = next(_rotation)
        behind = []
        for offset in range(len(aliases)):
            alias = aliases[(start + offset) % len(aliases)]
            if heard_covers(alias, needed_lsn) and _down_until.get(alias, 0.0) <= time.monotonic():
                return alias
            state = replica_state(alias)
            if not state.healthy:
                continue
            if state.has_replayed(needed_lsn):
                return state.alias
            behind.append(state.alias)
        return _first_to_replay(behind, needed_lsn) or DEFAULT_DB_ALIAS

    @staticmethod
    def standby_alias() -> str | None:
        """A replica to serve a read route while the primary cannot be reached (a failover's
        gap): the first that answers and is still a standby, streaming or not (with its primary
        gone it streams from nobody, and what it replayed is what the lost primary committed).
        ``None`` when ``STANDBY_READS`` is off, ``READ_CONSISTENCY`` is ``primary``, or none answers."""
        if not (memseek_setting("STANDBY_READS") and replicas_serve_reads()):
            return None
        for alias in replica_aliases():
            state = replica_state(alias)
            if state.reachable and state.in_recovery:
                return alias
        return None

    @staticmethod
    def standby_has_replayed(alias: str, needed_lsn: int | None) -> bool:
        """Whether the standby ``alias`` has replayed ``needed_lsn``, waiting up to ``REPLICA_WAIT_MS``.
        A standby promoted meanwhile has: it is the primary now, the server every write goes to."""
        if needed_lsn is None or _has_replayed(alias, needed_lsn, promoted_counts=True):
            return True
        return _first_to_replay([alias], needed_lsn, promoted_counts=True) is not None

    def db_for_read(self, model, **hints):
        return current_alias()

    def db_for_write(self, model, **hints):
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1, obj2, **hints):
        return True  # every alias holds the same rows: a replica is a copy of the primary

    def allow_migrate(self, db, app_label, model_name=None, **hints):
        return db == DEFAULT_DB_ALIAS  # a replica replays the primary's schema changes
