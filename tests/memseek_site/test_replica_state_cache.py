"""The per-process memory of each replica's replay position (``REPLICA_STATE_TTL_MS``): a read that a
position heard from a healthy replica within the TTL covers is routed there without a query; any
other read asks the replica, so a stale memory never sends a read to a replica that lacks its
write, nor keeps one from a replica that has caught up. Fake replicas and a fake clock; the
real primary and replica run the same rule in ``test_replicas.py``."""
from __future__ import annotations

import itertools
from contextlib import contextmanager
from types import SimpleNamespace
from unittest import mock

import pytest
from django.db import DEFAULT_DB_ALIAS, OperationalError
from django.test import override_settings
from hypothesis import given, settings
from hypothesis import strategies as st

from memseek_site import replicas
from memseek_site.conf import DEFAULTS
from memseek_site.replicas import ReplicaRouter, lsn_format

START = 0x3000000
TTL_MS = 1000


class FakeReplica:
    """A standby that answers the router's two state queries from its attributes, and counts them."""

    def __init__(self, replay: int = START):
        self.replay, self.queries = replay, 0
        self.up, self.in_recovery, self.streaming = True, True, True
        self.backend_pid = 100
        self.connection = None

    def cursor(self):
        self.ensure_connection()
        return _FakeCursor(self)

    def ensure_connection(self):
        if not self.up:
            raise OperationalError("connection refused")
        if self.connection is None:
            self.backend_pid += 1
            self.connection = SimpleNamespace(info=SimpleNamespace(host="127.0.0.1", port=5433,
                                                                   backend_pid=self.backend_pid))

    def close_if_health_check_failed(self):
        if self.connection is not None and not self.up:
            self.close()

    def close(self):
        self.connection = None


class _FakeCursor:
    def __init__(self, replica: FakeReplica):
        self.replica, self.sql = replica, None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def execute(self, sql, params=None):
        if not self.replica.up:
            raise OperationalError("connection refused")
        self.replica.queries += 1
        self.sql = sql

    def fetchone(self):
        r = self.replica
        if self.sql == replicas._STATE_SQL:
            return (r.in_recovery, lsn_format(r.replay), lsn_format(r.replay), 0.0, r.streaming, 8192,
                    "RecoveryWalStream")
        assert self.sql == replicas._REPLAY_SQL
        return lsn_format(r.replay), 8192, r.in_recovery


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance_ms(self, ms: float) -> None:
        self.now += ms / 1000


@contextmanager
def fake_replicas(count: int = 1, ttl_ms: int = TTL_MS):
    """``count`` fake replicas as ``replica_0``, ... with a fresh memory, rotation and fake clock."""
    fakes = {f"replica_{i}": FakeReplica() for i in range(count)}
    clock = FakeClock()
    with mock.patch.object(replicas, "connections", fakes), \
            mock.patch.object(replicas, "replica_aliases", lambda: sorted(fakes)), \
            mock.patch.object(replicas, "_heard", {}), mock.patch.object(replicas, "_down_until", {}), \
            mock.patch.object(replicas, "_rotation", itertools.count()), \
            mock.patch.object(replicas, "_clock", clock), \
            override_settings(MEMSEEK={"REPLICA_STATE_TTL_MS": ttl_ms, "REPLICA_WAIT_MS": 0}):
        yield fakes, clock


def test_the_setting_defaults_to_one_second():
    assert DEFAULTS["REPLICA_STATE_TTL_MS"] == 1000


def test_a_covered_read_within_the_ttl_asks_nothing():
    with fake_replicas() as (fakes, clock):
        replica = fakes["replica_0"]
        assert ReplicaRouter.read_alias(START) == "replica_0" and replica.queries == 1
        for needed in (START, START - 1, None, 0):
            clock.advance_ms(TTL_MS / 5 - 1)
            assert ReplicaRouter.read_alias(needed) == "replica_0"
        assert replica.queries == 1


def test_the_ttl_ends_the_memory_and_the_next_read_asks_again():
    with fake_replicas() as (fakes, clock):
        replica = fakes["replica_0"]
        ReplicaRouter.read_alias(None)
        clock.advance_ms(TTL_MS)
        assert ReplicaRouter.read_alias(None) == "replica_0" and replica.queries == 2
        clock.advance_ms(TTL_MS - 1)
        assert ReplicaRouter.read_alias(None) == "replica_0" and replica.queries == 2


def test_a_read_past_the_heard_position_asks_and_is_served_once_the_replica_has_it():
    with fake_replicas() as (fakes, clock):
        replica = fakes["replica_0"]
        ReplicaRouter.read_alias(None)
        # The replica has not replayed the write: asked, it says so, and the primary serves the read.
        assert ReplicaRouter.read_alias(START + 100) == DEFAULT_DB_ALIAS and replica.queries == 2
        # It catches up a moment later, within the TTL: the memory of it being behind is never used.
        replica.replay = START + 100
        clock.advance_ms(1)
        assert ReplicaRouter.read_alias(START + 100) == "replica_0" and replica.queries == 3
        # And the position it answered now covers the next read of that write.
        assert ReplicaRouter.read_alias(START + 100) == "replica_0" and replica.queries == 3


@pytest.mark.parametrize("change", ["lagging", "not_streaming", "promoted"])
def test_an_unhealthy_answer_forgets_the_replica(change):
    with fake_replicas() as (fakes, clock):
        replica = fakes["replica_0"]
        ReplicaRouter.read_alias(None)
        replica.streaming = change != "not_streaming"
        replica.in_recovery = change != "promoted"
        with override_settings(MEMSEEK={"REPLICA_STATE_TTL_MS": TTL_MS,
                                        "REPLICA_MAX_LAG_S": -1.0 if change == "lagging" else 10.0}):
            replica.replay = START + 8  # so the read past the memory asks
            assert ReplicaRouter.read_alias(START + 8) == DEFAULT_DB_ALIAS
            # Covered by the old memory, but the answer since said unhealthy: asked again, not served.
            assert ReplicaRouter.read_alias(START) == DEFAULT_DB_ALIAS and replica.queries == 3


def test_a_replica_that_fails_is_forgotten_and_skipped():
    with fake_replicas() as (fakes, clock):
        replica = fakes["replica_0"]
        ReplicaRouter.read_alias(None)
        replicas.mark_down("replica_0")  # what a read that broke on it does
        replica.up = False
        assert ReplicaRouter.read_alias(None) == DEFAULT_DB_ALIAS
        assert not replicas.heard_covers("replica_0", None)


def test_a_reconnected_session_asks_again():
    """What one server session said proves nothing of the next (a multi-host URL may reach another node)."""
    with fake_replicas() as (fakes, clock):
        replica = fakes["replica_0"]
        ReplicaRouter.read_alias(START)
        replica.close()  # as Django does with a connection past its age
        assert ReplicaRouter.read_alias(START) == "replica_0" and replica.queries == 2
        assert ReplicaRouter.read_alias(START) == "replica_0" and replica.queries == 2


def test_a_zero_ttl_asks_for_every_read():
    with fake_replicas(ttl_ms=0) as (fakes, clock):
        for _ in range(3):
            assert ReplicaRouter.read_alias(START) == "replica_0"
        assert fakes["replica_0"].queries == 3


def test_a_health_check_refreshes_the_memory():
    with fake_replicas() as (fakes, clock):
        replica = fakes["replica_0"]
        replica.replay = START + 64
        assert replicas.replica_state("replica_0").healthy
        assert ReplicaRouter.read_alias(START + 64) == "replica_0" and replica.queries == 1


# Each step: let time pass, let a replica replay further, stop or start one, or route a read that
# needs a position near the replicas' own (behind, at or past them).
_steps = st.lists(st.one_of(
    st.tuples(st.just("advance"), st.integers(min_value=0, max_value=2 * TTL_MS)),
    st.tuples(st.just("replay"), st.integers(min_value=0, max_value=1), st.integers(min_value=0, max_value=64)),
    st.tuples(st.just("toggle"), st.integers(min_value=0, max_value=1)),
    st.tuples(st.just("read"), st.integers(min_value=-64, max_value=64)),
    st.tuples(st.just("read_any"),),
), max_size=40)


@settings(max_examples=200, deadline=None)
@given(_steps)
def test_a_read_goes_to_a_replica_only_when_it_holds_the_write_and_never_misses_one_that_does(steps):
    with fake_replicas(count=2) as (fakes, clock):
        pair = [fakes["replica_0"], fakes["replica_1"]]
        for step in steps:
            if step[0] == "advance":
                clock.advance_ms(step[1])
            elif step[0] == "replay":
                pair[step[1]].replay += step[2]
            elif step[0] == "toggle":
                replica = pair[step[1]]
                replica.up = not replica.up
                if not replica.up:
                    replicas.mark_down(f"replica_{step[1]}")  # a read that broke on it marks it
                else:
                    replicas._down_until.clear()  # its retry interval has passed
            else:
                needed = None if step[0] == "read_any" else START + step[1]
                asked_before = sum(r.queries for r in pair)
                alias = ReplicaRouter.read_alias(needed)
                holders = {f"replica_{i}" for i, r in enumerate(pair)
                           if r.up and (needed is None or r.replay >= needed)}
                if alias != DEFAULT_DB_ALIAS:
                    assert alias in holders, (alias, needed, [r.replay for r in pair])
                else:
                    assert not holders, (needed, [r.replay for r in pair])  # no memory said "behind"
                assert sum(r.queries for r in pair) - asked_before <= 2  # at most one question each
