"""Reads while there is no primary (docs/failover.md, "Reads during the gap"), on one machine: a
second gunicorn whose ``DATABASE_URL`` names the streaming replica of ``test_replicas`` with
``target_session_attrs=read-write`` finds no server that takes writes, exactly as every process
does during a failover's gap, while its replica setting names the same standby. Reads are served
by the standby (its ``Memseek-Served-By`` says so), writes answer ``503 database_unavailable``
and change nothing, and a read the standby cannot yet answer with the caller's own write is
``503 standby_behind``, never a stale answer. The Patroni test (``test_failover``) does the same
with a real failover."""
from __future__ import annotations

import http.client
import json

import pytest
from django.db import connection

from bench.processes import Server
from memseek_site.consistency import SERVED_BY_HEADER, TOKEN_HEADER
from tests.memseek_site.test_replicas import CACHE_URL, _caught_up, live  # noqa: F401  (the module fixture)
from tests.retrieval_app.lexical_factories import note

pytestmark = [pytest.mark.replica, pytest.mark.django_db]

WAIT_MS = 300


def _no_primary_server(live, **settings: str) -> Server:  # noqa: F811
    url = live.replica.url(live.database) + "?target_session_attrs=read-write&connect_timeout=3"
    return Server(workers=1, ready_statuses=(503,), env={
        "DATABASE_URL": url, "DATABASE_REPLICA_URLS": live.replica.url(live.database), "CACHE_URL": CACHE_URL,
        "CELERY_BROKER_URL": "", "OMP_NUM_THREADS": "1", "PRELOAD_EMBEDDING_MODEL": "false",
        "TOUCH_ON_READ": "false", "REPLICA_WAIT_MS": str(WAIT_MS), **settings})


@pytest.fixture(scope="module")
def no_primary(live):  # noqa: F811
    server = _no_primary_server(live)
    yield server
    server.stop()


def _call(server: Server, method: str, path: str, key: str, payload=None, token: str | None = None):
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    if token is not None:
        headers[TOKEN_HEADER] = token
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    try:
        conn.request(method, path, body=None if payload is None else json.dumps(payload), headers=headers)
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), json.loads(response.read() or b"null")
    finally:
        conn.close()


def _records_named(text: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM catalog_app_record WHERE text = %s", (text,))
        return cursor.fetchone()[0]


def test_without_a_primary_reads_come_from_the_standby_and_writes_are_refused(live, no_primary):  # noqa: F811
    record, token = live.write("a", "gamma written before the primary went away")
    _caught_up(live, token)
    key = live.keys["a"]
    for sent in (token, None):  # with the token, and by the workspace's last write in the shared cache
        status, headers, answer = _call(no_primary, "GET", f"/records/{record}", key, token=sent)
        assert (status, headers.get(SERVED_BY_HEADER), answer["id"]) == (200, "replica_0", record), answer
    status, headers, answer = _call(no_primary, "GET", "/timeline?entity=e", key)
    assert (status, headers.get(SERVED_BY_HEADER)) == (200, "replica_0"), answer

    text = "delta refused while there is no primary"
    status, headers, answer = _call(no_primary, "POST", "/records", key, {"records": [note(text)]})
    assert (status, answer["error"]) == (503, "database_unavailable"), answer
    assert int(headers["Retry-After"]) > 0 and TOKEN_HEADER not in headers
    assert _records_named(text) == 0  # the refused write changed nothing


def test_a_read_the_standby_has_not_replayed_is_refused_not_stale(live, no_primary):  # noqa: F811
    key = live.keys["a"]
    live.replica.pause_replay()
    try:
        record, token = live.write("a", "epsilon written while replay is paused")
        assert not live.on_replica(record)
        # With the write's token, and without it (the workspace's last write, from the shared cache):
        # after waiting REPLICA_WAIT_MS for the standby, 503 standby_behind, never a 404 or old data.
        for sent in (token, None):
            status, headers, answer = _call(no_primary, "GET", f"/records/{record}", key, token=sent)
            assert (status, answer["error"]) == (503, "standby_behind"), answer
            assert int(headers["Retry-After"]) > 0
            assert answer.get("path") == ("headers.Memseek-Consistency-Token" if sent else None), answer
        # Another workspace wrote nothing the standby lacks: it is served.
        status, headers, _ = _call(no_primary, "GET", "/timeline?entity=e", live.keys["b"])
        assert (status, headers.get(SERVED_BY_HEADER)) == (200, "replica_0")
        # A malformed token is still the caller's mistake, named by its header.
        status, _, answer = _call(no_primary, "GET", f"/records/{record}", key, token="0/ZZ")
        assert (status, answer["error"], answer["path"]) == (400, "invalid_consistency_token",
                                                               "headers.Memseek-Consistency-Token"), answer
    finally:
        live.replica.resume_replay()
    _caught_up(live, token)
    status, headers, answer = _call(no_primary, "GET", f"/records/{record}", key, token=token)
    assert (status, headers.get(SERVED_BY_HEADER), answer["id"]) == (200, "replica_0", record), answer


def test_with_standby_reads_off_a_read_without_a_primary_is_refused(live):  # noqa: F811
    server = _no_primary_server(live, STANDBY_READS="false")
    try:
        record, _ = live.write("b", "zeta written for the switched-off server")
        status, headers, answer = _call(server, "GET", f"/records/{record}", live.keys["b"])
        assert (status, answer["error"]) == (503, "database_unavailable"), answer
        assert int(headers["Retry-After"]) > 0
    finally:
        server.stop()
