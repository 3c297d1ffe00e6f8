"""Read replicas with read-your-writes, end to end: gunicorn (two processes sharing the Redis
cache) serving the test database with a streaming replica of it made by ``pg_basebackup -R``
(``bench.streaming_replica``). Which server answered is proven, not inferred from the answer:
the ``Memseek-Served-By`` header names it, and a record the paused replica has not replayed
(checked on the replica itself) can only have come from the primary.

Every read route's work here runs on a hot standby, which refuses any write: a write hidden in a
read route (a receipt, a touch, the lexical index's pending rows) that did not go to the primary
would fail these requests."""
from __future__ import annotations

import http.client
import json
import os
import socket
import threading
import time
from collections import Counter

import pytest
from django.db import connection
from rest_framework.test import APIClient

from bench.processes import Server, database_url
from bench.streaming_replica import StreamingReplica
from catalog_app.services.workspaces import workspace_create
from memseek_site.consistency import SERVED_BY_HEADER, TOKEN_HEADER
from memseek_site.replicas import lsn_parse
from tests.retrieval_app.lexical_factories import body, load_lexical_catalog, note
from tests.conftest import flush_committed_rows

pytestmark = [pytest.mark.replica, pytest.mark.django_db]

MAX_LAG_S = 8
REDIS = ("127.0.0.1", 6379)
CACHE_URL = f"redis://{REDIS[0]}:{REDIS[1]}/{os.environ.get('MEMSEEK_TEST_REDIS_DB', '13')}"


class Live:
    """The server, the replica and two workspaces' keys."""

    def __init__(self, server: Server, replica: StreamingReplica, keys: dict, settings: dict):
        self.server, self.replica, self.keys, self.settings = server, replica, keys, settings
        self.database = settings["NAME"]

    def call(self, method: str, path: str, workspace: str, payload=None, token: str | None = None):
        """``(status, headers, body)`` of one request as ``workspace``'s key."""
        headers = {"Authorization": f"Bearer {self.keys[workspace]}", "Content-Type": "application/json"}
        if token is not None:
            headers[TOKEN_HEADER] = token
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=120)
        try:
            conn.request(method, path, body=None if payload is None else json.dumps(payload), headers=headers)
            response = conn.getresponse()
            raw = response.read()
            assert response.status < 500, (response.status, raw[:2000], self.server.log_tail(60))
            return response.status, dict(response.getheaders()), json.loads(raw) if raw else None
        finally:
            conn.close()

    def write(self, workspace: str, text: str) -> tuple[str, str]:
        """Write one note; its id and the response's consistency token."""
        status, headers, answer = self.call("POST", "/records", workspace, {"records": [note(text)]})
        assert status in (200, 201), answer
        assert headers[SERVED_BY_HEADER] == "primary"
        return answer["inserted"][0]["id"], headers[TOKEN_HEADER]

    def holds(self, table: str, row_id: str) -> bool:
        """Whether the standby itself holds the row (asked of the replica, not of the service)."""
        import psycopg

        with psycopg.connect(self.replica.url(self.database), autocommit=True) as conn:
            return conn.execute(f"SELECT count(*) FROM {table} WHERE id = %s", (row_id,)).fetchone()[0] == 1

    def holds_workspace(self, name: str) -> bool:
        import psycopg

        with psycopg.connect(self.replica.url(self.database), autocommit=True) as conn:
            row = conn.execute("SELECT count(*) FROM catalog_app_workspace WHERE name = %s", (name,)).fetchone()
        return row[0] == 1

    def on_replica(self, record_id: str) -> bool:
        return self.holds("catalog_app_record", record_id)

    def health(self) -> dict:
        return json.loads(self.server.request("GET", "/health")[1])


@pytest.fixture(scope="module")
def live(django_db_setup, django_db_blocker, tmp_path_factory):
    try:
        socket.create_connection(REDIS, timeout=1).close()
    except OSError:
        pytest.skip("needs Redis on 127.0.0.1:6379 for the shared cache (.ci/run starts it)")
    import redis

    client = redis.Redis.from_url(CACHE_URL)
    for key in client.scan_iter("*memseek:last-write-lsn:*"):
        client.delete(key)
    with django_db_blocker.unblock():
        keys = {}
        for name in ("a", "b"):
            workspace, keys[name] = workspace_create(name=f"replica-{name}")
            load_lexical_catalog(workspace, tmp_path_factory.mktemp(f"catalog_{name}"))
        settings = dict(connection.settings_dict)
    replica = StreamingReplica(settings)
    server = None
    try:
        server = Server(workers=2, env={
            "DATABASE_URL": database_url(settings), "DATABASE_REPLICA_URLS": replica.url(settings["NAME"]),
            "CACHE_URL": CACHE_URL, "CELERY_BROKER_URL": "", "OMP_NUM_THREADS": "1",
            "REPLICA_MAX_LAG_S": str(MAX_LAG_S), "REPLICA_RETRY_S": "1"})
        yield Live(server, replica, keys, settings)
    finally:
        if server is not None:
            server.stop()
        replica.remove()
        with django_db_blocker.unblock():
            flush_committed_rows()


def _caught_up(live: Live, token: str) -> None:
    live.replica.wait_for_replay(lsn_parse(token))


def test_the_replica_is_a_hot_standby_and_health_lists_it(live):
    assert live.replica.query("SELECT pg_is_in_recovery()") == (True,)
    (replica,) = live.health()["replicas"]
    assert replica["name"] == "replica_0" and replica["state"] == "ok", (replica, live.replica.log_tail())
    from memseek_client import MemseekClient

    with MemseekClient(f"http://127.0.0.1:{live.server.port}") as client:
        (seen,) = client.health().replicas
    assert (seen.name, seen.state) == ("replica_0", "ok") and seen.replay_lsn is not None


def test_a_write_then_a_read_sees_the_write_while_replay_is_paused(live):
    first, token = live.write("a", "alpha first note")
    _, other_token = live.write("b", "beta first note")
    _caught_up(live, max(token, other_token, key=lsn_parse))
    status, headers, _ = live.call("GET", f"/records/{first}", "a")
    assert (status, headers[SERVED_BY_HEADER]) == (200, "replica_0")

    live.replica.pause_replay()
    try:
        second, token = live.write("a", "alpha second note")
        assert not live.on_replica(second)  # the standby has not replayed it: only the primary can answer
        # With the token the write returned, and without it (the workspace's last write, from the
        # shared cache, whichever process serves the read), the read sees the write.
        for sent in (token, None, None, None):
            status, headers, answer = live.call("GET", f"/records/{second}", "a", token=sent)
            assert (status, headers[SERVED_BY_HEADER], answer["id"]) == (200, "primary", second)
        status, headers, answer = live.call("POST", "/search/lexical", "a", body("second"))
        assert status == 200 and headers[SERVED_BY_HEADER] == "primary"
        assert [hit["record"]["id"] for hit in answer["page"]["hits"]] == [second]
        # Another workspace wrote nothing the replica lacks: the replica serves it.
        for _ in range(4):
            status, headers, answer = live.call("POST", "/search/lexical", "b", body("beta"))
            assert (status, headers[SERVED_BY_HEADER]) == (200, "replica_0")
            assert answer["page"]["matched_records"] == 1
        # A token from the future (no server has replayed it) is served by the primary.
        status, headers, _ = live.call("POST", "/search/lexical", "b", body("beta"), token="FFFFFFFF/0")
        assert (status, headers[SERVED_BY_HEADER]) == (200, "primary")
    finally:
        live.replica.resume_replay()
    _caught_up(live, token)
    assert live.on_replica(second)
    status, headers, answer = live.call("GET", f"/records/{second}", "a")
    assert (status, headers[SERVED_BY_HEADER], answer["id"]) == (200, "replica_0", second)


def test_the_sdk_token_alone_keeps_read_your_writes_when_the_cache_forgot(live):
    """The shared cache's entry for the workspace is deleted between the write and the read: only
    the token the SDK carried from the write can send the read to the primary."""
    import redis

    from memseek_client import MemseekClient

    with MemseekClient(f"http://127.0.0.1:{live.server.port}", live.keys["a"]) as client:
        _, token = live.write("a", "theta before the pause")
        _caught_up(live, token)
        live.replica.pause_replay()
        try:
            written = client.write_records([note("theta written by the sdk")])
            record_id = str(written.inserted[0].id)
            assert client.consistency_token is not None and not live.on_replica(record_id)
            cache = redis.Redis.from_url(CACHE_URL)
            assert sum(cache.delete(key) for key in cache.scan_iter("*memseek:last-write-lsn:*")) >= 1
            assert str(client.get_record(record_id).id) == record_id
            # The same read without the token now goes to the replica, which lacks the record.
            status, headers, _ = live.call("GET", f"/records/{record_id}", "a")
            assert (status, headers[SERVED_BY_HEADER]) == (404, "replica_0")
        finally:
            live.replica.resume_replay()


def test_a_workspace_the_replica_lacks_still_authenticates_and_its_reads_are_routed(live):
    """A read is routed before its workspace row is read, so the row is read on the replica; one
    made outside the API (no last write recorded) that the standby has not replayed is read on the
    primary instead, never answered 401."""
    import psycopg

    from catalog_app.auth import generate_key
    from catalog_app.models import ApiKey, Workspace

    _, token = live.write("b", "iota so the replica's last replayed commit is recent")
    _caught_up(live, token)
    live.replica.pause_replay()
    try:
        key, digest = generate_key()
        with psycopg.connect(database_url(live.settings), autocommit=True) as conn, conn.transaction():
            (workspace_id,) = conn.execute(
                f"INSERT INTO {Workspace._meta.db_table} (name, created_at, catalog_revision, settings) "
                "VALUES ('replica-c', now(), 0, '{}') RETURNING id").fetchone()
            conn.execute(f"INSERT INTO {ApiKey._meta.db_table} (key_hash, label, created_at, workspace_id, "
                         "capabilities) VALUES (%s, '', now(), %s, ARRAY['read'])", (digest, workspace_id))
        live.keys["c"] = key
        assert not live.holds_workspace("replica-c")  # the standby lacks the row
        status, headers, answer = live.call("GET", "/rank/schema", "c")
        assert (status, headers[SERVED_BY_HEADER]) == (200, "replica_0"), answer
    finally:
        live.replica.resume_replay()


def test_a_receipt_written_by_a_read_on_the_replica_is_read_back(live):
    _, token = live.write("b", "gamma budget note")
    _caught_up(live, token)
    live.replica.pause_replay()
    try:
        status, headers, answer = live.call("POST", "/retrieve", "b", {"query": "gamma budget"})
        assert (status, headers[SERVED_BY_HEADER]) == (200, "replica_0"), answer
        # The receipt is a write: it went to the primary, and the read answers its position.
        token = headers[TOKEN_HEADER]
        assert not live.holds("retrieval_app_receipt", answer["receiptId"])
        status, headers, receipt = live.call("GET", f"/receipts/{answer['receiptId']}", "b")
        assert (status, headers[SERVED_BY_HEADER], receipt["id"]) == (200, "primary", answer["receiptId"])
    finally:
        live.replica.resume_replay()
    _caught_up(live, token)
    status, headers, _ = live.call("GET", f"/receipts/{answer['receiptId']}", "b")
    assert (status, headers[SERVED_BY_HEADER]) == (200, "replica_0")


def test_lexical_statistics_coverage_and_cursors_from_the_replica_equal_the_primarys(live, django_db_blocker):
    texts = [f"delta {'epsilon ' * (i % 4)}zeta {i}" for i in range(12)]
    token = None
    for text in texts:
        _, token = live.write("b", text)
    _caught_up(live, token)
    primary = APIClient()
    primary.credentials(HTTP_AUTHORIZATION=f"Bearer {live.keys['b']}")
    request = body("delta epsilon", limit=3, scan_limit=5)  # pages of five source rows, by cursor
    for page in range(10):
        status, headers, from_replica = live.call("POST", "/search/lexical", "b", request)
        assert (status, headers[SERVED_BY_HEADER]) == (200, "replica_0"), from_replica
        with django_db_blocker.unblock():
            response = primary.post("/search/lexical", request, format="json")
        assert response["Memseek-Served-By"] == "primary"
        assert _comparable(from_replica) == _comparable(response.json())
        after = from_replica["page"]["next_after"]
        if after is None:
            break
        request = body("delta epsilon", limit=3, scan_limit=5, after=after)
    assert after is None and page >= 2  # twelve rows at least: three pages or more, to the end


def _comparable(payload: dict) -> dict:
    """The payload without what differs between two runs of one query: its timing, and when a
    record was last read (touch-on-read)."""
    payload = {key: value for key, value in payload.items() if key != "timing"}
    for hit in payload["page"]["hits"]:
        hit["record"].pop("last_accessed", None)
    return payload


def test_a_replica_lagging_past_the_bound_is_skipped_and_health_says_so(live):
    live.replica.pause_replay()
    try:
        live.write("a", "eta written while replay is paused")
        time.sleep(MAX_LAG_S + 1)
        (replica,) = live.health()["replicas"]
        assert replica["state"] == "lagging" and replica["lag_s"] > MAX_LAG_S, replica
        status, headers, _ = live.call("POST", "/search/lexical", "b", body("beta"))
        assert (status, headers[SERVED_BY_HEADER]) == (200, "primary")
    finally:
        live.replica.resume_replay()


def test_a_replica_stopped_under_read_load_costs_no_5xx(live):
    """Four readers run until 40 reads have started after the stop (bounded at 120 s); every
    answer, before and after, is a 200, and the reads started after it come from the primary."""
    outcomes: list[tuple[float, int, str]] = []  # (when the read started, status, served by)
    lock, stop_at = threading.Lock(), [None]
    deadline = time.monotonic() + 120

    def reader():
        while time.monotonic() < deadline:
            started = time.monotonic()
            status, headers, _ = live.call("POST", "/search/lexical", "b", body("beta"))
            with lock:
                outcomes.append((started, status, headers.get(SERVED_BY_HEADER)))
                if stop_at[0] is not None and sum(1 for t, _, _ in outcomes if t > stop_at[0]) >= 40:
                    return

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for thread in threads:
        thread.start()
    while len(outcomes) < 20 and time.monotonic() < deadline:
        time.sleep(0.01)
    live.replica.stop("immediate")
    stop_at[0] = time.monotonic()
    for thread in threads:
        thread.join()
    statuses = Counter(status for _, status, _ in outcomes)
    assert statuses == {200: len(outcomes)}, statuses
    before = Counter(server for t, _, server in outcomes if t < stop_at[0])
    after = Counter(server for t, _, server in outcomes if t > stop_at[0])
    assert before["replica_0"] > 0 and after and set(after) == {"primary"}, (before, after)
    (replica,) = live.health()["replicas"]
    assert replica["state"] == "down"
    # Started again, it serves reads again once the process's retry interval has passed.
    live.replica.start()
    time.sleep(1.5)
    live.replica.wait_for_replay(0)
    served = {live.call("POST", "/search/lexical", "b", body("beta"))[1][SERVED_BY_HEADER] for _ in range(6)}
    assert "replica_0" in served
