"""The namespace cluster (docs/cluster.md), built by ``python -m deploy.cluster up`` from a test
topology and removed by ``down`` whatever happens: HAProxy spreads traffic over both API hosts,
the API hosts share one state (a write, a revoked key within ``API_KEY_CACHE_TTL_S``, an
activated view version on the next request, a workspace's rate limit), a poison task does not block its queue, a killed
API host costs only the requests in flight on it, a killed worker host loses no acknowledged
record, and ``up`` restarts what was killed. The tests run in file order; the hosts are killed
last, and the last test has ``up`` restart them.

Each bound comes from the test topology's settings (``TEST_ENV``) and the balancer's check
settings, plus the allowance named beside it for work whose time depends on the machine.
"""
from __future__ import annotations

import http.client
import threading
import time
from pathlib import Path

import psycopg
import pytest

from catalog_app.models import Record, RecordEmbedding
from deploy.cluster import hosts, network
from deploy.cluster.control import cluster_status
from tests.deploy.cluster_support import (
    TEST_ENV, call, cluster_command, key_create, manage, missing_prerequisite, cluster_topology, wait_for,
    workspace_with_key)

pytestmark = pytest.mark.cluster

# Enrichment of the acknowledged records after a worker host dies: its unacknowledged task is
# found by the survivor's recovery (records unready for PENDING_RECOVERY_AGE_S, scanned every
# PENDING_RECOVERY_INTERVAL_S) and re-enqueued, and one worker enriches the whole batch; that
# last part is the generous allowance for two loaded cores.
ENRICH_ALLOWANCE_S = 150
RECOVERY_BOUND_S = TEST_ENV["PENDING_RECOVERY_AGE_S"] + 2 * TEST_ENV["PENDING_RECOVERY_INTERVAL_S"] + ENRICH_ALLOWANCE_S


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    reason = missing_prerequisite()
    if reason:
        pytest.skip(reason)
    topology = cluster_topology(tmp_path_factory.mktemp("cluster"))
    try:
        up = cluster_command(topology, "up")
        assert up.returncode == 0, f"cluster up failed:\n{up.stdout}\n{up.stderr[-5000:]}"
        yield topology
    finally:
        down = cluster_command(topology, "down")
        assert down.returncode == 0, down.stderr
        assert not network.namespaces() & {host.namespace for host in topology.hosts}
        assert not network.link_exists(topology.bridge)
        # Nothing runs from the cluster's files any more: PgBouncer, Redis, HAProxy and PostgreSQL
        # were all started on configuration or data under the run directory.
        assert not _running_from(hosts.run_dir(topology))


def _running_from(directory) -> list[str]:
    """Command lines of the running processes (zombies aside) that name ``directory``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
            command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError):
            continue
        if state != "Z" and str(directory) in command:
            found.append(command)
    return found


@pytest.fixture(scope="module")
def key(cluster):
    return workspace_with_key(cluster, "cluster")


def _record(text: str) -> dict:
    return {"entity": "contact.maria", "type": "event", "text": text}


def test_up_is_idempotent_and_status_reports_every_host_healthy(cluster):
    again = cluster_command(cluster, "up")
    assert again.returncode == 0 and "already up" in again.stdout
    rows = cluster_status(cluster)
    assert {name for name, *_ in rows} == {host.name for host in cluster.hosts}
    assert all(healthy for *_, healthy in rows), rows
    assert cluster_command(cluster, "status").returncode == 0


def _both_in_rotation(cluster) -> None:
    wait_for(lambda: set(hosts.haproxy_servers(cluster).values()) == {"UP"}, 30, "HAProxy to route to both API hosts")


def test_traffic_through_haproxy_reaches_both_api_hosts(cluster, key):
    balancer = cluster.one("balancer")
    _both_in_rotation(cluster)
    answers = [call(balancer, "GET", "/timeline?entity=contact.maria", key) for _ in range(12)]
    assert all(answer.status == 200 for answer in answers), [a.status for a in answers]
    assert {answer.api_host for answer in answers} == {api.name for api in cluster.of_role("api")}


def test_api_traffic_reaches_the_database_through_pgbouncer(cluster, key):
    database = cluster.one("database")

    def transactions() -> int:
        return sum(int(row["total_xact_count"]) for row in hosts.pooler_admin(cluster, "SHOW STATS")
                   if row["database"] == cluster.database_name)

    before = transactions()
    for _ in range(6):
        answer = call(cluster.one("balancer"), "POST", "/search", key, {"q": "pooled", "mode": "hybrid"})
        assert answer.status == 200, answer.body
    assert transactions() > before  # the searches' transactions passed through the pooler
    # PostgreSQL sees the service's sessions come from the pooler (the database host's own
    # address), none from an API or worker host; migrate and admin commands come from the bridge.
    with psycopg.connect(hosts.database_url(cluster, "postgres")) as direct:
        addresses = {row[0] for row in direct.execute(
            "SELECT DISTINCT host(client_addr) FROM pg_stat_activity WHERE datname = %s", (cluster.database_name,))}
    assert database.address in addresses
    assert not addresses & {host.address for host in cluster.hosts if host.role in ("api", "worker")}


def test_a_write_on_one_api_host_is_read_on_the_other(cluster, key):
    first, second = cluster.of_role("api")
    written = call(first, "POST", "/records", key, {"records": [_record("Maria asked for the renewal quote.")]})
    assert written.status == 200, written.body
    record_id = written.body["inserted"][0]["id"]
    read = call(second, "GET", f"/records/{record_id}", key)
    assert read.status == 200 and read.body["content"]["text"] == "Maria asked for the renewal quote."
    # The workers (on other hosts again) finish it, and the other API host sees that too.
    wait_for(lambda: call(second, "GET", f"/records/{record_id}", key).body.get("embedding_space")
             and _ready_ids(cluster, [record_id]) == {record_id}, 120, "the record to be enriched")


def test_a_revoked_key_is_refused_on_both_api_hosts_within_the_cache_ttl(cluster, key):
    apis = cluster.of_role("api")
    key_id, doomed = key_create(cluster, "cluster")
    for _ in range(4):  # every gunicorn process of both hosts has likely cached it
        for api in apis:
            assert call(api, "GET", "/timeline?entity=contact.maria", doomed).status == 200
    manage(cluster, "revoke_key", key_id)
    revoked_at = time.monotonic()
    refused_after = {}
    for api in apis:
        wait_for(lambda: call(api, "GET", "/timeline?entity=contact.maria", doomed).status == 401,
                 TEST_ENV["API_KEY_CACHE_TTL_S"] + 2, f"{api.name} to refuse the revoked key")
        refused_after[api.name] = time.monotonic() - revoked_at
    # Refused for good on every process of both hosts once the TTL since the revocation has run
    # (a process that cached the key later than the first to refuse it may hold it until then),
    # and the workspace's other key still works.
    time.sleep(max(0.0, revoked_at + TEST_ENV["API_KEY_CACHE_TTL_S"] + 0.5 - time.monotonic()))
    for api in apis:
        assert {call(api, "GET", "/timeline?entity=contact.maria", doomed).status for _ in range(6)} == {401}
        assert call(api, "GET", "/timeline?entity=contact.maria", key).status == 200
    assert max(refused_after.values()) <= TEST_ENV["API_KEY_CACHE_TTL_S"] + 2, refused_after


def test_an_activated_view_version_is_seen_by_every_api_host_on_its_next_request(cluster, key):
    apis = cluster.of_role("api")

    def active(api) -> set[int]:
        views = call(api, "GET", "/views", key).body["views"]
        return {view["version"] for view in views if view["name"] == "customer_context" and view["active"]}

    before = active(apis[0])
    assert len(before) == 1
    for api in apis:  # every gunicorn process of both hosts has likely compiled and cached the catalog
        assert all(active(api) == before for _ in range(4))
    target = 1 if before == {2} else 2
    manage(cluster, "activate_view", "customer_context", str(target), "--workspace", "cluster")
    # Each request reads its workspace's catalog revision, so the very next one on any host sees it.
    for api in apis:
        assert all(active(api) == {target} for _ in range(4))


def test_a_workspace_over_its_rate_is_refused_by_either_api_host_while_another_is_not(cluster, key):
    """The counts live in the shared cache (CACHE_URL, the broker host's Redis), so the workspace's
    six reads a day are six across both API hosts: requests alternate between them, the seventh
    and later are 429 on each host, and the other workspace reads on both as before. A day's window
    (django-ratelimit's, offset per counter) makes a window boundary inside the test all but
    impossible."""
    apis = cluster.of_role("api")
    limited = workspace_with_key(cluster, "limited")
    manage(cluster, "workspace_setting", "limited", "limits.workspaceRate", '{"read": "6/d"}')
    time.sleep(TEST_ENV["API_KEY_CACHE_TTL_S"] + 1)  # every process has read the workspace afresh
    answers = [call(apis[n % 2], "GET", "/timeline?entity=contact.maria", limited) for n in range(10)]
    assert [answer.status for answer in answers] == [200] * 6 + [429] * 4, [(a.status, a.body) for a in answers]
    for answer in answers[6:]:
        assert answer.body["error"] == "rate_limited" and answer.body["retry_after_s"] >= 1, answer.body
    assert all(call(api, "GET", "/timeline?entity=contact.maria", key).status == 200 for api in apis for _ in range(3))


def test_a_poison_task_is_dead_lettered_and_the_queue_behind_it_drains(cluster, key):
    from celery import Celery

    from catalog_app.models import DeadLetter
    from memseek_site.queues import ENRICHMENT, TASK_ROUTES

    producer = Celery("memseek-cluster-test", broker=hosts.broker_url(cluster), set_as_current=False)
    producer.conf.task_routes = TASK_ROUTES
    try:
        poison = producer.send_task("catalog_app.tasks.enrich_records", args=[["not-a-record-id"]]).id
    finally:
        producer.close()
    written = call(cluster.one("balancer"), "POST", "/records", key,
                   {"records": [_record("Sent behind the poison task: the parcel arrived damaged.")]})
    assert written.status == 200, written.body
    behind = written.body["inserted"][0]["id"]
    wait_for(lambda: _ready_ids(cluster, [behind]) == {behind}, 120, "the record behind the poison to be ready")

    def letter():
        with psycopg.connect(hosts.database_url(cluster)) as connection:
            return connection.execute(f"SELECT queue, args, tries, error FROM {DeadLetter._meta.db_table} "
                                      "WHERE task_id = %s", (poison,)).fetchone()

    queue, args, tries, error = wait_for(letter, 60, "the poison task's dead letter")
    assert (queue, args, tries) == (ENRICHMENT, [["not-a-record-id"]], 1) and error.startswith("ValidationError")
    import redis

    broker = redis.Redis.from_url(hosts.broker_url(cluster))
    try:
        wait_for(lambda: broker.llen(ENRICHMENT) == 0, 30, "the enrichment queue to drain")
    finally:
        broker.close()


def _ready_ids(cluster, ids: list[str]) -> set[str]:
    with psycopg.connect(hosts.database_url(cluster)) as connection:
        rows = connection.execute(f"SELECT id::text FROM {Record._meta.db_table} "
                                  "WHERE id::text = ANY(%s) AND enriched_at IS NOT NULL", (ids,)).fetchall()
    return {row[0] for row in rows}


def _embeddings_per_record(cluster, ids: list[str]) -> dict[str, int]:
    with psycopg.connect(hosts.database_url(cluster)) as connection:
        rows = connection.execute(f"SELECT record_id::text, count(*) FROM {RecordEmbedding._meta.db_table} "
                                  "WHERE record_id::text = ANY(%s) GROUP BY record_id", (ids,)).fetchall()
    return dict(rows)


def test_killing_a_worker_host_mid_task_loses_no_acknowledged_record(cluster, key):
    balancer = cluster.one("balancer")
    victim = cluster.host("worker1")
    log = hosts.log_path(cluster, victim)
    tasks_before = log.read_text(errors="replace").count("Task catalog_app.tasks.enrich_records[")
    acknowledged = []
    for batch in range(4):
        records = [_record(f"Batch {batch} note {n}: Maria's team reviewed ticket {batch * 100 + n} "
                           f"and asked for a follow-up on the {('renewal', 'invoice', 'outage')[n % 3]}.")
                   for n in range(100)]
        answer = call(balancer, "POST", "/records", key, {"records": records})
        assert answer.status == 200, answer.body
        acknowledged += [item["id"] for item in answer.body["inserted"]]
    wait_for(lambda: log.read_text(errors="replace").count("Task catalog_app.tasks.enrich_records[") > tasks_before,
             120, "worker1 to receive an enrichment task")
    killed = network.host_kill(victim)
    assert killed, "worker1 had no process to kill"
    unready_at_kill = len(acknowledged) - len(_ready_ids(cluster, acknowledged))
    assert unready_at_kill > 0, "every record was ready before the kill: the test proved nothing"
    wait_for(lambda: len(_ready_ids(cluster, acknowledged)) == len(acknowledged), RECOVERY_BOUND_S,
             f"all {len(acknowledged)} acknowledged records ({unready_at_kill} unready at the kill) to be ready")
    # Processed once: one embedding per record, none written twice by the redelivered or re-enqueued task.
    counts = _embeddings_per_record(cluster, acknowledged)
    assert set(counts) == set(acknowledged)
    assert set(counts.values()) == {1}


def test_killing_an_api_host_under_load_fails_only_its_requests_in_flight(cluster, key):
    balancer, victim = cluster.one("balancer"), cluster.host("api1")
    _both_in_rotation(cluster)
    outcomes: list[tuple[float, float, int | str, str | None]] = []  # start, end, status, API host
    stop = threading.Event()

    def client():
        while not stop.is_set():
            start = time.monotonic()
            try:
                answer = call(balancer, "GET", "/timeline?entity=contact.maria&limit=5", key, timeout=30)
                status, api_host = answer.status, answer.api_host
            except http.client.HTTPException:  # the host died while its answer was being relayed
                status, api_host = "truncated", None
            except OSError:
                status, api_host = "no answer", None
            outcomes.append((start, time.monotonic(), status, api_host))

    threads = [threading.Thread(target=client) for _ in range(6)]
    for thread in threads:
        thread.start()
    try:
        wait_for(lambda: {o[3] for o in outcomes if o[2] == 200} >= {"api1", "api2"}, 60,
                 "load to reach both API hosts")
        kill_started = time.monotonic()
        network.host_kill(victim)
        # Killed processes hold their listening socket until they have exited (a sync worker frees
        # a loaded model first): until then the dying host still accepts connections.
        wait_for(lambda: not network.namespace_pids(victim.namespace), 30, "api1's processes to exit")
        kill_done = time.monotonic()
        wait_for(lambda: hosts.haproxy_servers(cluster).get("api1", "").startswith("DOWN"),
                 cluster.balancer.removal_bound_s + 1, "HAProxy to take api1 out")
        removed_after = time.monotonic() - kill_done
        time.sleep(3)  # load goes on after the removal
    finally:
        stop.set()
        for thread in threads:
            thread.join(60)
    failed = [o for o in outcomes if o[2] != 200]
    acknowledged = [o for o in outcomes if o[2] == 200]
    in_flight = [o for o in outcomes if o[0] <= kill_done and o[1] >= kill_started]
    summary = (f"{len(acknowledged)} acknowledged, {len(failed)} failed, {len(in_flight)} in flight at the kill "
               f"(kill took {kill_done - kill_started:.2f} s; failures as start, end after the kill started, status: "
               f"{[(round(o[0] - kill_started, 2), round(o[1] - kill_started, 2), o[2]) for o in failed]})")
    # A failure is only a request that was in flight on the host while it died (sent before its
    # last process exited, answered after the kill began): HAProxy answers it 502, or, when the
    # host died while its answer was being relayed, the answer is cut short. Never a request
    # refused outright.
    assert all(o[0] <= kill_done and o[1] >= kill_started for o in failed), summary
    assert {o[2] for o in failed} <= {502, "truncated"}, summary
    assert removed_after <= cluster.balancer.removal_bound_s, summary
    after_removal = [o for o in acknowledged if o[0] > kill_done + removed_after]
    assert after_removal and {o[3] for o in after_removal} == {"api2"}, summary


def _main_processes(host) -> set[int]:
    """The processes of ``host`` whose parent is outside it: the ones the cluster started (the
    postmaster, gunicorn's and Celery's main process, ...), not a database backend or a pool
    process, which may come and go."""
    pids = set(network.namespace_pids(host.namespace))
    parents = {}
    for pid in pids:
        try:
            parents[pid] = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return {pid for pid, parent in parents.items() if parent not in pids}


def test_up_after_the_kills_restarts_only_the_killed_hosts(cluster, key):
    """Runs after both kills: api1 and worker1 have no process left."""
    killed = {"api1", "worker1"}
    assert {name for name, *_, healthy in cluster_status(cluster) if not healthy} == killed
    kept = {host.name: _main_processes(host) for host in cluster.hosts if host.name not in killed}
    repaired = cluster_command(cluster, "up")
    assert repaired.returncode == 0, repaired.stderr[-3000:]
    assert "restarting api1, worker1" in repaired.stdout, repaired.stdout
    # The database, broker, balancer and the other hosts kept their processes.
    assert {name: _main_processes(cluster.host(name)) for name in kept} == kept
    _both_in_rotation(cluster)
    answers = [call(cluster.one("balancer"), "GET", "/timeline?entity=contact.maria", key) for _ in range(12)]
    assert {answer.api_host for answer in answers if answer.status == 200} == {"api1", "api2"}
    assert all(healthy for *_, healthy in cluster_status(cluster))
