"""Rate limits across API hosts: two gunicorn servers (two "hosts", each its own process tree)
on the test database share one Redis cache, so a workspace's count is one count whichever host
a request lands on; past it both hosts answer 429 with Retry-After while another workspace is
unaffected. The SDK, pointed at the servers, waits out a 429 and succeeds."""
from __future__ import annotations

import json
import time

import pytest
from django.db import connection

from bench.processes import Server, database_url
from catalog_app.services.workspaces import workspace_create
from tests.catalog_app.test_throttle import CACHE_URL, forget_counts, redis_client
from tests.conftest import flush_committed_rows
from tests.retrieval_app.lexical_factories import load_lexical_catalog, note

pytestmark = pytest.mark.django_db

BULK_RATE = "3/d"  # the deployment's, from the servers' environment
READ_RATE = "6/d"  # workspace "a"'s own override
SDK_READ_RATE = "1/3s"  # workspace "sdk"'s key rate: windows short enough for the SDK to wait out


@pytest.fixture(scope="module")
def hosts(django_db_setup, django_db_blocker, tmp_path_factory):
    cache = redis_client()
    forget_counts(cache)
    keys = {}
    with django_db_blocker.unblock():
        overrides = {"a": {"limits.workspaceRate": {"read": READ_RATE}}, "b": {},
                     "sdk": {"limits.keyRate": {"read": SDK_READ_RATE}}}
        for name, stored in overrides.items():
            workspace, keys[name] = workspace_create(name=f"rate-live-{name}")
            load_lexical_catalog(workspace, tmp_path_factory.mktemp(f"catalog_{name}"))
            workspace.settings = stored
            workspace.save()
        settings = dict(connection.settings_dict)
    env = {"DATABASE_URL": database_url(settings), "CACHE_URL": CACHE_URL, "CELERY_BROKER_URL": "",
           "OMP_NUM_THREADS": "1", "RATE_LIMIT_WORKSPACE_BULK": BULK_RATE}
    servers = []
    try:
        for _ in range(2):
            servers.append(Server(workers=1, env=env))
        yield servers, keys
    finally:
        for server in servers:
            server.stop()
        forget_counts(cache)
        with django_db_blocker.unblock():
            flush_committed_rows()


def answer(server: Server, method: str, path: str, key: str, payload=None) -> tuple[int, dict]:
    status, raw = server.request(method, path, None if payload is None else json.dumps(payload).encode(), key)
    assert status < 500, (status, raw[:2000], server.log_tail(40))
    return status, json.loads(raw)


def test_a_workspace_read_count_is_shared_by_both_hosts(hosts):
    (first, second), keys = hosts
    statuses = [answer(server, "GET", "/collections", keys["a"])[0] for server in (first, second) * 3]
    assert statuses == [200] * 6
    for server in (first, second):  # the seventh, on either host, is over the shared count
        status, body = answer(server, "GET", "/collections", keys["a"])
        assert (status, body["error"], body["scope"], body["limit"]) == (429, "rate_limited", "workspace", READ_RATE)
        assert body["retry_after_s"] >= 1
    for server in (first, second):  # another workspace, on either host, is unaffected
        assert answer(server, "GET", "/collections", keys["b"])[0] == 200


def test_the_deployment_bulk_rate_holds_across_hosts_and_a_refused_write_changes_nothing(hosts):
    (first, second), keys = hosts
    for n, server in enumerate((first, second, first)):
        status, _ = answer(server, "POST", "/records", keys["b"], {"records": [note(f"written {n}")]})
        assert status in (200, 201)
    status, body = answer(second, "POST", "/records", keys["b"], {"records": [note("refused")]})
    assert (status, body["error"], body["route_class"]) == (429, "rate_limited", "bulk")
    hits = answer(first, "POST", "/search/lexical", keys["b"],
                  {"contract_version": 1, "mode": "lexical", "scope": {}, "query": {"text": "refused"}})[1]
    assert hits["page"]["matched_records"] == 0


def test_the_sdk_waits_out_a_429_from_either_host_and_succeeds(hosts):
    from memseek_client import MemseekClient, RetryPolicy

    servers, keys = hosts
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        time.sleep(seconds)

    clients = [MemseekClient(f"http://127.0.0.1:{server.port}", keys["sdk"], retry=RetryPolicy(attempts=2),
                             sleep=sleep) for server in servers]
    try:
        # One read in three seconds is allowed: the second read of a burst alternating hosts meets
        # a 429, whose Retry-After the client waits before sending the read again; with two
        # attempts, a Retry-After that ended before the next window opened would fail the read.
        for n in range(6):
            assert clients[n % 2].collections() is not None
            if waits:
                break
    finally:
        for client in clients:
            client.close()
    assert waits and all(1 <= wait <= 3 for wait in waits)
