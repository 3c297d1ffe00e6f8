"""Patroni failover under load (docs/failover.md): etcd and two Patroni nodes in synchronous mode
on loopback, a live gunicorn configured with the multi-host ``DATABASE_URL``, 8 writer and 4
reader threads; the primary's postmaster is SIGKILLed. The standby is promoted, the same gunicorn
writes again without a restart, no answer is anything but a 2xx or ``503 database_unavailable``,
and every write acknowledged before, during or after the failover is on the new primary exactly
once (and, once the old primary has rejoined as a standby, on it too)."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest

from bench.processes import Server
from tests.patroni_cluster import PatroniCluster

pytestmark = [pytest.mark.failover, pytest.mark.model]

ROOT = Path(__file__).resolve().parents[2]
WRITERS, READERS = 8, 4
# Correctness bounds, not timing benchmarks: the leader key's ttl (20 s in deploy/patroni) is the
# worst case for Patroni to notice and hand over; the rest is slack for a loaded two-core machine.
RESUME_BOUND_S = 90
REJOIN_BOUND_S = 180
ENTITY_PREFIX = "failover.w"


@pytest.fixture(scope="module")
def cluster_service():
    """The cluster, its ``memseek`` database migrated with the example catalog and a workspace,
    and gunicorn on it; yields (cluster, server, API key)."""
    cluster = PatroniCluster(nodes=2)
    server = None
    try:
        with psycopg.connect(cluster.url("postgres"), autocommit=True) as connection:
            connection.execute('CREATE DATABASE "memseek"')
        env = {"DATABASE_URL": cluster.url("memseek"), "CELERY_BROKER_URL": "", "OMP_NUM_THREADS": "1",
               "TOUCH_ON_READ": "false"}
        run = dict(cwd=ROOT, env={**os.environ, **env}, check=True, capture_output=True, text=True, timeout=600)
        subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], **run)
        key = subprocess.run([sys.executable, "manage.py", "create_workspace", "failover-co"], **run).stdout.split()[-1]
        subprocess.run([sys.executable, "manage.py", "load_catalog", str(ROOT / "fixtures" / "catalogs" / "example"),
                        "--workspace", "failover-co"], **run)
        server = Server(workers=2, env=env)
        yield cluster, server, key
    finally:
        if server is not None:
            server.stop()
        cluster.stop()


@dataclass
class Load:
    """What the client threads saw: acknowledged writes (entity -> record id, with when each was
    sent and answered), refused writes, and every answer that was neither a 2xx nor a 503
    ``database_unavailable`` with ``Retry-After``."""
    acknowledged: dict[str, tuple[str, float, float]] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)
    reads: dict[str, int] = field(default_factory=lambda: {"ok": 0, "unavailable": 0})
    wrong: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event = field(default_factory=threading.Event)


def _answer(server: Server, method: str, path: str, key: str, body=None) -> tuple[int, dict | None, str]:
    """(status, JSON body, problem): problem is "" for a 2xx or a proper 503 database_unavailable."""
    try:
        status, raw = server.request(method, path, None if body is None else json.dumps(body).encode(), key,
                                     timeout=120)
    except OSError as error:  # the service itself must never drop a connection
        return 0, None, f"{method} {path}: {error!r}"
    payload = json.loads(raw or b"null")
    if 200 <= status < 300 or (status == 503 and payload.get("error") == "database_unavailable"):
        return status, payload, ""
    return status, payload, f"{method} {path}: {status} {raw[:300]!r}"


def _writer(server: Server, key: str, load: Load, number: int) -> None:
    sequence = 0
    while not load.stop.is_set():
        sequence += 1
        entity = f"{ENTITY_PREFIX}{number}.{sequence}"
        body = {"records": [{"entity": entity, "collection": "main", "type": "note",
                             "text": f"failover write {number} {sequence}"}]}
        sent = time.monotonic()
        status, payload, problem = _answer(server, "POST", "/records", key, body)
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
        status, payload, problem = _answer(server, "GET", path, key)
        with load.lock:
            if problem:
                load.wrong.append(problem)
            elif status == 503:
                load.reads["unavailable"] += 1
            else:
                load.reads["ok"] += 1
        if status != 200:
            time.sleep(0.2)


def _stored(url: str) -> dict[str, list[str]]:
    """entity -> ids of the load's records on the server at ``url``."""
    with psycopg.connect(url) as connection:
        rows = connection.execute("SELECT entity, id::text FROM catalog_app_record WHERE entity LIKE %s",
                                  (ENTITY_PREFIX + "%",)).fetchall()
    stored: dict[str, list[str]] = {}
    for entity, record_id in rows:
        stored.setdefault(entity, []).append(record_id)
    return stored


def _acked_after(load: Load, instant: float) -> list[float]:
    with load.lock:
        return sorted(answered for _, sent, answered in load.acknowledged.values() if sent > instant)


def test_killing_the_primary_promotes_the_standby_and_loses_no_acknowledged_write(cluster_service):
    cluster, server, key = cluster_service
    old_primary, standby = cluster.primary(), cluster.sync_standby()
    assert old_primary is not None and standby is not None
    load = Load()
    threads = [threading.Thread(target=_writer, args=(server, key, load, n), daemon=True) for n in range(WRITERS)]
    threads += [threading.Thread(target=_reader, args=(server, key, load), daemon=True) for _ in range(READERS)]
    for thread in threads:
        thread.start()
    try:
        cluster.wait_for(lambda: len(load.acknowledged) >= 3 * WRITERS, 180, "writes before the kill")
        before = len(load.acknowledged)
        killed_at = time.monotonic()
        old_primary.kill_postmaster()

        promoted_s = cluster.wait_for(lambda: cluster.primary() is standby, RESUME_BOUND_S, "the standby's promotion")
        cluster.wait_for(lambda: _acked_after(load, killed_at), RESUME_BOUND_S, "a write acknowledged after the kill")
        resumed_s = _acked_after(load, killed_at)[0] - killed_at
        resumed_at = killed_at + resumed_s
        # After: writes go on through the new primary.
        cluster.wait_for(lambda: len(_acked_after(load, resumed_at)) >= 3 * WRITERS, 180, "writes after the failover")
    finally:
        load.stop.set()
        for thread in threads:
            thread.join(timeout=180)
    rejoin_s = cluster.wait_for(lambda: old_primary.role() in ("replica", "sync"), REJOIN_BOUND_S,
                                "the old primary to rejoin as a standby")

    new_primary_url = cluster.url("memseek")
    stored = _stored(new_primary_url)
    lost = sorted(entity for entity, (record_id, _, _) in load.acknowledged.items() if stored.get(entity) != [record_id])
    duplicated = sorted(entity for entity, ids in stored.items() if len(ids) > 1)
    survived_unacknowledged = sorted(entity for entity in load.refused if entity in stored)
    print(f"\nfailover: {len(load.acknowledged)} writes acknowledged ({before} before the kill), "
          f"{len(load.acknowledged) - len(lost)} survived, {len(lost)} lost, {len(duplicated)} duplicated; "
          f"{len(load.refused)} refused with 503 ({len(survived_unacknowledged)} of them committed all the same); "
          f"reads {load.reads['ok']} answered, {load.reads['unavailable']} refused with 503; "
          f"promotion after {promoted_s:.1f} s, writes resumed after {resumed_s:.1f} s (bound {RESUME_BOUND_S} s), "
          f"old primary rejoined after {rejoin_s:.1f} s more")
    assert load.wrong == [], load.wrong[:10]
    assert lost == [] and duplicated == []
    assert resumed_s <= RESUME_BOUND_S
    assert load.refused, "the kill refused no write: the load did not span the failover"
    assert server.process.poll() is None  # the same gunicorn, never restarted
    # Each stored record of the load is one a writer sent; nothing else appeared.
    assert set(stored) <= set(load.acknowledged) | set(load.refused)

    # The rejoined old primary has every acknowledged write too (synchronous mode keeps it in step).
    standby_url = cluster.url("memseek", target_session_attrs="standby")
    cluster.wait_for(lambda: set(_stored(standby_url)) >= set(load.acknowledged), 60,
                     "the rejoined standby to replay every acknowledged write")
