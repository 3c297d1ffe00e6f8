"""Patroni failover under load (docs/failover.md): etcd and two Patroni nodes in synchronous mode
on loopback, a live gunicorn configured with the multi-host ``DATABASE_URL``, 8 writer and 4
reader threads, and one fault at a time: the primary's postmaster SIGKILLed (the standby is
promoted, the same gunicorn writes again without a restart), the synchronous standby's
postmaster SIGKILLed, etcd SIGKILLed. Under each, no answer is anything but a 2xx or
``503 database_unavailable`` (a read also ``503 standby_behind``), and every write acknowledged
before, during or after the fault is on the primary exactly once. The gunicorn names the nodes
once more as its replica (``target_session_attrs=prefer-standby``), so while there is no primary
its reads are served by the standby. The tests share one cluster and run in order."""
from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest

from bench.patroni_cluster import PatroniCluster
from bench.processes import Server

pytestmark = [
    pytest.mark.failover, pytest.mark.model,
    pytest.mark.skipif(shutil.which("etcd") is None, reason="the failover tests need etcd on PATH, and there is none: "
                       "apt-get install etcd-server etcd-client (.ci/run installs them)"),
]

ROOT = Path(__file__).resolve().parents[2]
WRITERS, READERS = 8, 4
# Correctness bounds, not timing benchmarks: the leader key's ttl (20 s in deploy/patroni) is the
# worst case for Patroni to notice and hand over; the rest is slack for a loaded two-core machine.
RESUME_BOUND_S = 90
REJOIN_BOUND_S = 180
# Of the quiet workspace's reads sent while there was no primary (from the kill to the first write
# acknowledged after it), at least this share is answered, by the standby: the rest may meet the
# moment of promotion itself (the standby stops being one between the two checks of a read).
GAP_READS_ANSWERED_MIN = 0.9
CACHE_URL = f"redis://127.0.0.1:6379/{os.environ.get('MEMSEEK_TEST_REDIS_DB', '13')}"
# Patroni's leader key lifetime (deploy/patroni/patroni.yml): without failsafe mode a primary that
# cannot reach etcd demotes itself within it.
LEADER_TTL_S = 20


@pytest.fixture(scope="module")
def cluster_service():
    """The cluster, its ``memseek`` database migrated with the example catalog and a workspace,
    and gunicorn on it; yields (cluster, server, API key)."""
    import redis

    try:  # the shared cache: each workspace's last write, for the two workers' reads
        cache = redis.Redis.from_url(CACHE_URL, socket_connect_timeout=2)
        # Positions another cluster's run left are nothing to this new cluster's WAL.
        for stale in cache.scan_iter("*memseek:last-write-lsn:*"):
            cache.delete(stale)
    except redis.ConnectionError:
        pytest.skip("needs Redis on 127.0.0.1:6379 for the shared cache (.ci/run starts it)")
    cluster = PatroniCluster(nodes=2)
    server = None
    try:
        with psycopg.connect(cluster.url("postgres"), autocommit=True) as connection:
            connection.execute('CREATE DATABASE "memseek"')
        # The replica URL names every node too: libpq prefers a standby, so reads keep a server
        # while there is no primary; the shared cache carries each workspace's last write between
        # the two workers (read-your-writes), and a read waits up to 0.5 s for the standby's
        # replay (a waiting read holds one of the two workers).
        env = {"DATABASE_URL": cluster.url("memseek"), "CELERY_BROKER_URL": "", "OMP_NUM_THREADS": "1",
               "TOUCH_ON_READ": "false", "DATABASE_REPLICA_URLS": cluster.url("memseek", "prefer-standby"),
               "CACHE_URL": CACHE_URL, "REPLICA_WAIT_MS": "500"}

        def manage(*args: str) -> str:
            done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env={**os.environ, **env},
                                  capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, f"manage.py {' '.join(args)}: {done.stderr[-3000:]}"
            return done.stdout

        manage("migrate", "-v", "0")
        key = manage("create_workspace", "failover-co").split()[-1]
        manage("load_catalog", str(ROOT / "fixtures" / "catalogs" / "example"), "--workspace", "failover-co")
        quiet_key = manage("create_workspace", "failover-quiet").split()[-1]
        manage("load_catalog", str(ROOT / "fixtures" / "catalogs" / "example"), "--workspace", "failover-quiet")
        server = Server(workers=2, env=env)
        # A workspace that writes only now, before any fault: its reads never wait for a write.
        notes = [{"entity": f"quiet{n}", "collection": "main", "type": "note", "text": f"quiet note {n}"}
                 for n in range(8)]
        status, _, raw = _request(server, "POST", "/records", quiet_key, {"records": notes})
        assert status == 200, raw
        yield cluster, server, key, Quiet(quiet_key, [hit["id"] for hit in json.loads(raw)["inserted"]])
    finally:
        if server is not None:
            server.stop()
        cluster.stop()


@dataclass
class Quiet:
    """A second workspace's key and the records it wrote before the tests (it writes nothing after)."""
    key: str
    record_ids: list[str]


@dataclass
class Load:
    """What the client threads saw: acknowledged writes (entity -> record id, with when each was
    sent and answered), refused writes, and every answer that was neither a 2xx nor a 503
    ``database_unavailable``. Every entity written starts with ``prefix``."""
    prefix: str
    acknowledged: dict[str, tuple[str, float, float]] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)
    reads: dict[str, int] = field(default_factory=lambda: {"ok": 0, "unavailable": 0})
    # Every read through the service: (sent, answered, status, error code or "", Memseek-Served-By)
    read_log: list[tuple[float, float, int, str, str]] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event = field(default_factory=threading.Event)

    def acked_after(self, instant: float) -> list[float]:
        """When each write sent after ``instant`` was acknowledged, earliest first."""
        with self.lock:
            return sorted(answered for _, sent, answered in self.acknowledged.values() if sent > instant)


def _answer(server: Server, method: str, path: str, key: str, body=None) -> tuple[int, dict | None, str, dict]:
    """(status, JSON body, problem, headers): problem is "" for a 2xx or a 503
    database_unavailable with Retry-After (for a GET also 503 standby_behind)."""
    try:
        status, headers, raw = _request(server, method, path, key, body)
    except OSError as error:  # the service itself must never drop a connection
        return 0, None, f"{method} {path}: {error!r}", {}
    payload = json.loads(raw or b"null")
    if 200 <= status < 300:
        return status, payload, "", headers
    refusals = ("database_unavailable", "standby_behind") if method == "GET" else ("database_unavailable",)
    if status == 503 and payload.get("error") in refusals and int(headers.get("Retry-After", 0)) > 0:
        return status, payload, "", headers
    return status, payload, f"{method} {path}: {status} {raw[:300]!r}", headers


def _request(server: Server, method: str, path: str, key: str, body) -> tuple[int, dict, bytes]:
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    try:
        connection.request(method, path, body=None if body is None else json.dumps(body).encode(),
                           headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def _writer(server: Server, key: str, load: Load, number: int) -> None:
    sequence = 0
    while not load.stop.is_set():
        sequence += 1
        entity = f"{load.prefix}{number}.{sequence}"
        body = {"records": [{"entity": entity, "collection": "main", "type": "note",
                             "text": f"failover write {number} {sequence}"}]}
        sent = time.monotonic()
        status, payload, problem, _ = _answer(server, "POST", "/records", key, body)
        with load.lock:
            if problem:
                load.wrong.append(problem)
            elif status == 503:
                load.refused.append(entity)
            else:
                load.acknowledged[entity] = (payload["inserted"][0]["id"], sent, time.monotonic())
        if status != 200:
            time.sleep(0.2)


def _reader(server: Server, key: str, load: Load) -> None:
    rng = random.Random()
    while not load.stop.is_set():
        with load.lock:
            known = list(load.acknowledged.items())
        if not known:
            time.sleep(0.1)
            continue
        entity, (record_id, _, _) = rng.choice(known)
        path = rng.choice([f"/records/{record_id}", f"/timeline?entity={entity}"])
        sent = time.monotonic()
        status, payload, problem, headers = _answer(server, "GET", path, key)
        with load.lock:
            load.read_log.append((sent, time.monotonic(), status, (payload or {}).get("error", "") if status >= 400
                                  else "", headers.get("Memseek-Served-By", "")))
            if problem:
                load.wrong.append(problem)
            elif status == 503:
                load.reads["unavailable"] += 1
            else:
                load.reads["ok"] += 1
        if status != 200:
            time.sleep(0.2)


def _quiet_reader(server: Server, quiet: Quiet, load: Load, log: list) -> None:
    """Reads the quiet workspace's records until the load stops; appends (sent, answered, status,
    error code or "", Memseek-Served-By) to ``log`` and any answer not allowed to ``load.wrong``."""
    rng = random.Random()
    while not load.stop.is_set():
        sent = time.monotonic()
        status, payload, problem, headers = _answer(server, "GET", f"/records/{rng.choice(quiet.record_ids)}",
                                                    quiet.key)
        with load.lock:
            if problem:
                load.wrong.append(problem)
            log.append((sent, time.monotonic(), status, (payload or {}).get("error", "") if status >= 400 else "",
                        headers.get("Memseek-Served-By", "")))
        time.sleep(0.05)


def _standby_reader(url: str, load: Load, answers: list[tuple[float, float, str]]) -> None:
    """Reads through ``url`` (every node, ``target_session_attrs=prefer-standby``: what a reader
    URL for standbys names) on a new connection each time, as a reader that lost its server reconnects;
    appends (started, finished, error or "") to ``answers``."""
    rng = random.Random()
    while not load.stop.is_set():
        with load.lock:
            known = [record_id for record_id, _, _ in load.acknowledged.values()]
        started, error = time.monotonic(), ""
        try:
            with psycopg.connect(url) as connection:
                connection.execute("SELECT count(*) FROM catalog_app_record WHERE id = %s",
                                   (rng.choice(known) if known else None,)).fetchone()
        except psycopg.Error as failure:
            error = repr(failure)
        answers.append((started, time.monotonic(), error))
        time.sleep(0.1)


@contextmanager
def running_load(server: Server, key: str, prefix: str):
    """8 writers and 4 readers on ``server`` until the block ends; yields their ``Load``."""
    load = Load(prefix)
    threads = [threading.Thread(target=_writer, args=(server, key, load, n), daemon=True) for n in range(WRITERS)]
    threads += [threading.Thread(target=_reader, args=(server, key, load), daemon=True) for _ in range(READERS)]
    for thread in threads:
        thread.start()
    try:
        yield load
    finally:
        load.stop.set()
        for thread in threads:
            thread.join(timeout=180)


def _stored(url: str, prefix: str) -> dict[str, list[str]]:
    """entity -> ids of the records whose entity starts with ``prefix`` on the server at ``url``."""
    with psycopg.connect(url) as connection:
        rows = connection.execute("SELECT entity, id::text FROM catalog_app_record WHERE starts_with(entity, %s)",
                                  (prefix,)).fetchall()
    stored: dict[str, list[str]] = {}
    for entity, record_id in rows:
        stored.setdefault(entity, []).append(record_id)
    return stored


def _check_survivors(cluster: PatroniCluster, load: Load, what: str) -> str:
    """Assert that the answers were all 2xx or 503 database_unavailable, and that every
    acknowledged write is on the primary exactly once (and nothing that was never sent is);
    returns the counts, for the test's output."""
    stored = _stored(cluster.url("memseek"), load.prefix)
    lost = sorted(entity for entity, (record_id, _, _) in load.acknowledged.items()
                  if stored.get(entity) != [record_id])
    duplicated = sorted(entity for entity, ids in stored.items() if len(ids) > 1)
    committed_anyway = sorted(entity for entity in load.refused if entity in stored)
    summary = (f"{what}: {len(load.acknowledged)} writes acknowledged, {len(load.acknowledged) - len(lost)} "
               f"survived, {len(lost)} lost, {len(duplicated)} duplicated; {len(load.refused)} refused with 503 "
               f"({len(committed_anyway)} of them committed all the same); reads {load.reads['ok']} answered, "
               f"{load.reads['unavailable']} refused with 503")
    print(f"\n{summary}")
    assert load.wrong == [], load.wrong[:10]
    assert lost == [] and duplicated == [], (lost[:10], duplicated[:10])
    assert set(stored) <= set(load.acknowledged) | set(load.refused)
    return summary


def test_killing_the_primary_promotes_the_standby_and_loses_no_acknowledged_write(cluster_service):
    cluster, server, key, quiet = cluster_service
    cluster.wait_for(cluster.healthy, REJOIN_BOUND_S, "a primary and a synchronous standby")
    old_primary, standby = cluster.primary(), cluster.sync_standby()
    assert old_primary is not None and standby is not None
    standby_reads: list[tuple[float, float, str]] = []
    with running_load(server, key, "failover.primary-killed.w") as load:
        reader = threading.Thread(target=_standby_reader, daemon=True,
                                  args=(cluster.url("memseek", "prefer-standby"), load, standby_reads))
        reader.start()
        quiet_log: list[tuple[float, float, int, str, str]] = []
        quiet_readers = [threading.Thread(target=_quiet_reader, args=(server, quiet, load, quiet_log), daemon=True)
                         for _ in range(2)]
        for thread in quiet_readers:
            thread.start()
        cluster.wait_for(lambda: len(load.acknowledged) >= 3 * WRITERS, 180, "writes before the kill")
        before = len(load.acknowledged)
        killed_at = time.monotonic()
        old_primary.kill_postmaster()
        promoted_s = cluster.wait_for(lambda: cluster.primary() is standby, RESUME_BOUND_S, "the standby's promotion")
        cluster.wait_for(lambda: load.acked_after(killed_at), RESUME_BOUND_S, "a write acknowledged after the kill")
        resumed_at = load.acked_after(killed_at)[0]
        # After: writes go on through the new primary.
        cluster.wait_for(lambda: len(load.acked_after(resumed_at)) >= 3 * WRITERS, 180, "writes after the failover")
    reader.join(timeout=60)
    for thread in quiet_readers:
        thread.join(timeout=180)
    rejoin_s = cluster.wait_for(lambda: old_primary.role() in ("replica", "sync"), REJOIN_BOUND_S,
                                "the old primary to rejoin as a standby")

    summary = _check_survivors(cluster, load, "primary killed")
    print(f"{before} acknowledged before the kill; promotion after {promoted_s:.1f} s, writes resumed after "
          f"{resumed_at - killed_at:.1f} s (bound {RESUME_BOUND_S} s), old primary rejoined {rejoin_s:.1f} s later")
    assert resumed_at - killed_at <= RESUME_BOUND_S
    # A reader of the standbys' URL kept reading while no primary took writes.
    gap_reads = [error for started, finished, error in standby_reads if finished > killed_at and started < resumed_at]
    print(f"reads through the prefer-standby URL: {len(standby_reads)}, {len(gap_reads)} of them during the failover, "
          f"{sum(1 for *_, error in standby_reads if error)} failed")
    assert gap_reads and not any(error for *_, error in standby_reads), standby_reads[:5]
    assert load.refused, f"the kill refused no write, so the load did not span the failover: {summary}"
    assert server.process.poll() is None  # the same gunicorn, never restarted
    # The service's own reads while there was no primary. The quiet workspace's are served by the
    # standby. The writers' own workspace needs its last write, whose position (the primary's write
    # position after it) may hold WAL the standby never got: each such read is 503 standby_behind,
    # never an answer without the write; counted, not bounded.
    def during_gap(log):
        return [entry for entry in log if entry[0] > killed_at and entry[1] < resumed_at]

    for name, log in (("quiet workspace", quiet_log), ("writers' workspace", load.read_log)):
        gap = during_gap(log)
        print(f"{name}: service reads during the failover: {len(gap)}, "
              f"{sum(1 for entry in gap if 200 <= entry[2] < 300)} answered (served by "
              f"{sorted({entry[4] for entry in gap if 200 <= entry[2] < 300})}), refused "
              f"{dict(Counter(entry[3] for entry in gap if entry[2] >= 300))}")
    gap = during_gap(quiet_log)
    answered = [entry for entry in gap if 200 <= entry[2] < 300]
    assert gap, "no read of the quiet workspace was sent and answered while there was no primary"
    assert len(answered) >= GAP_READS_ANSWERED_MIN * len(gap), gap
    # The standby answered (it said pg_is_in_recovery() for the request); a read between the
    # promotion and the first write after it may already be the new primary's.
    assert "replica_0" in {entry[4] for entry in answered}, gap
    # The rejoined old primary has every acknowledged write too (synchronous mode kept it in step).
    standby_url = cluster.url("memseek", target_session_attrs="standby")
    cluster.wait_for(lambda: set(_stored(standby_url, load.prefix)) >= set(load.acknowledged), 60,
                     "the rejoined standby to replay every acknowledged write")


def test_killing_the_synchronous_standby_refuses_no_write(cluster_service):
    """The primary's commits wait for the standby's flush; the standby's Patroni restarts its
    PostgreSQL, which reconnects and catches up, and the waiting commits complete. No failover,
    and no write or read is refused."""
    cluster, server, key, _ = cluster_service
    cluster.wait_for(cluster.healthy, REJOIN_BOUND_S, "a primary and a synchronous standby")
    primary, standby = cluster.primary(), cluster.sync_standby()
    assert primary is not None and standby is not None
    with running_load(server, key, "failover.standby-killed.w") as load:
        cluster.wait_for(lambda: len(load.acknowledged) >= 2 * WRITERS, 180, "writes before the kill")
        killed_at = time.monotonic()
        standby.kill_postmaster()
        cluster.wait_for(lambda: standby.role() == "sync", REJOIN_BOUND_S, "the standby to come back in sync")
        back_at = time.monotonic()
        cluster.wait_for(lambda: len(load.acked_after(back_at)) >= 2 * WRITERS, 180,
                         "writes after the standby's return")
    _check_survivors(cluster, load, "standby killed")
    print(f"standby back in sync after {back_at - killed_at:.1f} s")
    assert cluster.primary() is primary
    assert load.refused == [] and load.reads["unavailable"] == 0


def test_with_etcd_gone_the_primary_keeps_accepting_writes(cluster_service):
    """Failsafe mode: the primary cannot renew its leader key but reaches the standby's REST API,
    so it stays primary past the key's lifetime instead of demoting itself; etcd's return
    changes nothing."""
    cluster, server, key, _ = cluster_service
    cluster.wait_for(cluster.healthy, REJOIN_BOUND_S, "a primary and a synchronous standby")
    primary = cluster.primary()
    assert primary is not None
    with running_load(server, key, "failover.etcd-killed.w") as load:
        cluster.wait_for(lambda: len(load.acknowledged) >= 2 * WRITERS, 180, "writes before the kill")
        cluster.stop_etcd()
        expired_at = time.monotonic() + LEADER_TTL_S + 5
        try:
            cluster.wait_for(lambda: len(load.acked_after(expired_at)) >= 2 * WRITERS, LEADER_TTL_S + 120,
                             "writes after the leader key expired")
        finally:
            cluster.start_etcd()
    cluster.wait_for(lambda: cluster.healthy() and cluster.primary() is primary, REJOIN_BOUND_S,
                     "the cluster to settle once etcd is back")
    _check_survivors(cluster, load, "etcd killed")
    assert load.refused == [] and load.reads["unavailable"] == 0
