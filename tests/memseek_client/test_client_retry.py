"""Retries, backoff and timeouts, against a real HTTP server on loopback that answers from a
script: a 503 and a 429 are retried (after ``Retry-After`` when sent, else a jittered exponential
wait), a connection error too, any other 4xx never, and attempts are bounded."""
from __future__ import annotations

import random
import socket

import httpx
import pytest

from memseek_client import (ConnectionFailed, MemseekClient, RateLimited, ResponseShapeError, RetryPolicy, Timeout,
                            Unavailable, Unprocessable)
from memseek_client.models import Health

from .scripted_server import RecordingSleep, Reply, ScriptedServer

UNAVAILABLE = {"error": "database_unavailable", "detail": "the database cannot be reached; retry shortly"}
POLICY = RetryPolicy(attempts=3, backoff_base=0.2, backoff_max=1.0)


def test_two_503s_then_a_200_honour_retry_after_and_then_back_off_with_jitter():
    with ScriptedServer(Reply(503, UNAVAILABLE, (("Retry-After", "1"),)), Reply(503, UNAVAILABLE),
                        Reply(200, {"ok": True, "db": True})) as server:
        sleep = RecordingSleep()
        with MemseekClient(server.url, "key", retry=POLICY, sleep=sleep) as client:
            assert client.health() == Health(ok=True, db=True)
    assert len(server.seen) == 3
    assert sleep.waits[0] == 1.0  # the server's Retry-After, not the policy's backoff
    assert 0 <= sleep.waits[1] <= 0.2 * 2  # full jitter over base * 2 ** (attempt - 1)
    # The waits happened between the attempts the server saw.
    assert server.seen[1].at - server.seen[0].at >= 1.0
    assert server.seen[2].at - server.seen[1].at >= sleep.waits[1]


def test_the_backoff_is_jittered_exponential_and_capped():
    policy = RetryPolicy(attempts=10, backoff_base=0.5, backoff_max=3.0)
    rng = random.Random(7)
    draws = {attempt: [policy.delay(attempt, None, rng) for _ in range(300)] for attempt in (1, 2, 3, 6)}
    for attempt, ceiling in ((1, 0.5), (2, 1.0), (3, 2.0), (6, 3.0)):
        assert 0 <= min(draws[attempt]) and max(draws[attempt]) <= ceiling
        assert max(draws[attempt]) > ceiling * 0.9 and len(set(draws[attempt])) > 250  # spread, not a constant
    assert policy.delay(10, None, rng) is None and policy.delay(2, 4.0, rng) == 4.0


def test_503s_past_the_attempt_bound_raise_unavailable_with_the_envelope():
    with ScriptedServer(Reply(503, UNAVAILABLE, (("Retry-After", "0"),))) as server:
        sleep = RecordingSleep()
        with MemseekClient(server.url, "key", retry=POLICY, sleep=sleep) as client:
            with pytest.raises(Unavailable) as caught:
                client.timeline("contact.maria")
    assert len(server.seen) == 3 and sleep.waits == [0.0, 0.0]
    error = caught.value
    assert (error.status, error.code, error.detail, error.retry_after) == (503, "database_unavailable",
                                                                           UNAVAILABLE["detail"], 0.0)


def test_a_retry_after_beyond_the_policys_ceiling_is_not_waited_out():
    with ScriptedServer(Reply(503, UNAVAILABLE, (("Retry-After", "3600"),))) as server:
        sleep = RecordingSleep()
        with MemseekClient(server.url, "key", retry=POLICY, sleep=sleep) as client:
            with pytest.raises(Unavailable) as caught:
                client.health()
    assert len(server.seen) == 1 and sleep.waits == [] and caught.value.retry_after == 3600.0


RATE_LIMITED = {"error": "rate_limited", "detail": "slow down", "retry_after_s": 1, "scope": "key",
                "route_class": "bulk", "limit": "2/s"}


def test_a_429_write_is_sent_again_after_retry_after():
    """A 429 was refused before anything ran, so even a POST is sent again, after the server's wait."""
    written = {"inserted": [{"index": 0, "id": "r1", "ready": True}], "duplicates": []}
    with ScriptedServer(Reply(429, RATE_LIMITED, (("Retry-After", "1"),)), Reply(200, written)) as server:
        sleep = RecordingSleep()
        with MemseekClient(server.url, "key", retry=POLICY, sleep=sleep) as client:
            result = client.write_records([{"entity": "e", "type": "note", "text": "x"}])
    assert result.inserted[0].id == "r1"
    assert [seen.method for seen in server.seen] == ["POST", "POST"] and sleep.waits == [1.0]


def test_429s_past_the_attempt_bound_raise_rate_limited_with_the_envelope():
    with ScriptedServer(Reply(429, RATE_LIMITED, (("Retry-After", "1"),))) as server:
        sleep = RecordingSleep()
        with MemseekClient(server.url, "key", retry=POLICY, sleep=sleep) as client:
            with pytest.raises(RateLimited) as caught:
                client.collections()
    assert len(server.seen) == 3 and sleep.waits == [1.0, 1.0]
    error = caught.value
    assert (error.code, error.retry_after, error.extra["scope"], error.extra["retry_after_s"]) == (
        "rate_limited", 1.0, "key", 1)


@pytest.mark.parametrize("status", [400, 401, 404, 409, 413, 422])
def test_a_4xx_is_never_retried(status):
    envelope = {"error": "request_schema", "detail": "no", "path": "records[0].text"}
    with ScriptedServer(Reply(status, envelope)) as server:
        sleep = RecordingSleep()
        with MemseekClient(server.url, "key", retry=POLICY, sleep=sleep) as client:
            with pytest.raises(Exception) as caught:
                client.write_records([{"entity": "e", "type": "note", "text": "x"}])
    assert len(server.seen) == 1 and sleep.waits == []
    assert (caught.value.status, caught.value.path) == (status, "records[0].text")


def test_a_refused_connection_is_retried_within_the_bound_then_raises():
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sleep = RecordingSleep()
    with MemseekClient(f"http://127.0.0.1:{port}", "key", retry=POLICY, sleep=sleep) as client:
        with pytest.raises(ConnectionFailed) as caught:
            client.write_records([{"entity": "e", "type": "note", "text": "x"}])
    assert len(sleep.waits) == 2 and caught.value.status is None
    assert isinstance(caught.value.__cause__, httpx.ConnectError)


def test_a_connection_dropped_mid_exchange_is_retried_for_get_and_not_for_post():
    with ScriptedServer(Reply(drop=True), Reply(200, {"ok": True, "db": True})) as server:
        with MemseekClient(server.url, "key", retry=POLICY, sleep=RecordingSleep()) as client:
            assert client.health().ok
    assert len(server.seen) == 2
    with ScriptedServer(Reply(drop=True), Reply(200, {"inserted": [], "duplicates": []})) as server:
        with MemseekClient(server.url, "key", retry=POLICY, sleep=RecordingSleep()) as client:
            with pytest.raises(ConnectionFailed):
                client.write_records([{"entity": "e", "type": "note", "text": "x"}])
    assert len(server.seen) == 1  # the write may have been applied: not sent twice


def test_a_slow_answer_times_out_once_and_is_not_retried():
    with ScriptedServer(Reply(200, {"ok": True, "db": True}, delay_s=5)) as server:
        sleep = RecordingSleep()
        with MemseekClient(server.url, "key", timeout=0.3, retry=POLICY, sleep=sleep) as client:
            with pytest.raises(Timeout) as caught:
                client.health()
    assert len(server.seen) == 1 and sleep.waits == [] and caught.value.code == "timeout"


def test_the_key_and_json_body_are_sent_as_the_api_expects():
    with ScriptedServer(Reply(200, {"inserted": [{"index": 0, "id": "r1", "ready": True}], "duplicates": []}),
                        Reply(200, {"records": [], "next_before_seq": None, "truncated": False})) as server:
        with MemseekClient(server.url + "/", "sk-test", retry=POLICY) as client:
            result = client.write_records([{"entity": "e", "type": "note", "text": "é"}])
            client.timeline("e", collections=["main", "tickets"], include_system=False, limit=5)
    assert result.inserted[0].id == "r1"
    post, get = server.seen
    assert (post.method, post.path) == ("POST", "/records")
    assert post.headers["Authorization"] == "Bearer sk-test" and post.headers["Content-Type"] == "application/json"
    assert post.body.decode() == '{"records": [{"entity": "e", "type": "note", "text": "é"}]}'
    assert get.path == "/timeline?entity=e&collections=main%2Ctickets&limit=5&include_system=false"


def test_an_unprocessable_answer_keeps_extra_envelope_members():
    body = {"error": "view_parameter", "detail": "task is required", "path": "task", "allowed": ["entity"]}
    with ScriptedServer(Reply(422, body)) as server:
        with MemseekClient(server.url, "key") as client:
            with pytest.raises(Unprocessable) as caught:
                client.query_view("customer_context", {"entity": "x"})
    assert caught.value.extra["allowed"] == ["entity"] and "task is required" in str(caught.value)


def test_a_success_body_of_the_wrong_shape_is_a_response_shape_error_naming_the_member():
    with ScriptedServer(Reply(200, {"records": [{"id": 1}], "next_before_seq": None, "truncated": False})) as server:
        with MemseekClient(server.url, "key") as client:
            with pytest.raises(ResponseShapeError) as caught:
                client.timeline("e")
    assert caught.value.path == "$.records[0].id" and "must be a string" in caught.value.detail
