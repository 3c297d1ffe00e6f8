"""Every exception class from a real error response: the live server's envelopes become the
class of their status with ``code``, ``detail``, ``path`` and ``status``; a server without its
database gives a real ``503 database_unavailable`` with ``Retry-After``. Statuses no route of
the service answers in these tests (403, 429, a proxy's non-JSON 502) come from the scripted server."""
from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from bench.processes import free_port, stop_process
from memseek_client import (NO_RETRY, ApiError, BadRequest, ClientError, Conflict, Forbidden, MemseekClient,
                            MemseekError, MethodNotAllowed, NotFound, PayloadTooLarge, RateLimited, RecordInput,
                            ServerError, Unauthorized, Unavailable, Unprocessable)
from memseek_client.routes import Call

from .conftest import LIVE, LIVE_MAX_BODY_BYTES
from .scripted_server import Reply, ScriptedServer

pytestmark = LIVE
ROOT = Path(__file__).resolve().parents[2]


def _record(**fields) -> RecordInput:
    return RecordInput(**{"entity": "contact.err", "collection": "main", "type": "note", "text": "x", **fields})


CASES = [
    ("bad key", lambda c: MemseekClient(c.base_url, "not-a-key").collections(), Unauthorized, 401, "unauthorized",
     None),
    ("no key", lambda c: MemseekClient(c.base_url).collections(), Unauthorized, 401, "unauthorized", None),
    ("missing record", lambda c: c.get_record("00000000-0000-4000-8000-000000000000"), NotFound, 404,
     "record_not_found", None),
    ("unknown route", lambda c: c._execute(Call("GET", "/no/such/route", None)), NotFound, 404, "not_found", None),
    ("wrong method", lambda c: c._execute(Call("DELETE", "/records", None)), MethodNotAllowed, 405,
     "method_not_allowed", None),
    ("body too large", lambda c: c.write_records([_record(text="y" * (LIVE_MAX_BODY_BYTES + 1))]), PayloadTooLarge,
     413, "body_too_large", None),
    ("unknown key", lambda c: c.write_records([{"entity": "contact.err", "type": "note", "text": "x", "colour": 1}]),
     Unprocessable, 422, "request_schema", "records[0].colour"),
    ("NUL in text", lambda c: c.write_records([_record(text="a\x00b")]), Unprocessable, 422, "invalid_character",
     "records[0].text"),
    ("too deep", lambda c: c.write_records([_record(content={"text": "x", "deep": _nested(70)})]), Unprocessable,
     422, "json_too_deep", None),
    ("wrong type", lambda c: c.write_records([_record(text=5)]), Unprocessable, 422, "request_schema",
     "records[0].text"),
    ("mode conflict", lambda c: c.retrieve("q", mode="deterministic", rerank=True), BadRequest, 400,
     "mode_conflict", "rerank"),
    ("not a draft", lambda c: c.approve_record(c.write_records([_record()]).inserted[0].id), Conflict, 409,
     "not_a_draft", None),
]


def _nested(depth: int):
    value: object = "leaf"
    for _ in range(depth):
        value = {"n": value}
    return value


@pytest.mark.parametrize(("call", "cls", "status", "code", "path"), [case[1:] for case in CASES],
                         ids=[case[0] for case in CASES])
def test_each_error_response_becomes_its_exception_class(client, call, cls, status, code, path):
    before = client.timeline("contact.err").records
    with pytest.raises(cls) as caught:
        call(client)
    error = caught.value
    assert (error.status, error.code) == (status, code)
    assert isinstance(error, ClientError) and isinstance(error, ApiError) and isinstance(error, MemseekError)
    assert error.detail and (path is None or error.path == path)
    if code != "not_a_draft":
        assert client.timeline("contact.err").records == before  # a rejected write wrote nothing


@pytest.fixture(scope="module")
def databaseless_server():
    """gunicorn whose database does not answer (a closed loopback port)."""
    dead, port = free_port(), free_port()
    log = tempfile.NamedTemporaryFile(prefix="memseek-sdk-nodb-", suffix=".log", delete=False)
    env = {"PATH": "/usr/bin:/bin", "DATABASE_URL": f"postgresql://postgres@127.0.0.1:{dead}/memseek",
           "CELERY_BROKER_URL": "", "OMP_NUM_THREADS": "1"}
    process = subprocess.Popen([sys.executable, "-m", "gunicorn", "memseek_site.wsgi", "--bind", f"127.0.0.1:{port}",
                                "--workers", "1", "--log-level", "warning"], cwd=ROOT, env=env, stdout=log,
                               stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        assert process.poll() is None, Path(log.name).read_text()
        try:
            httpx.get(url + "/health", timeout=5)
            break
        except httpx.TransportError:
            assert time.monotonic() < deadline, Path(log.name).read_text()
            time.sleep(0.2)
    yield url
    stop_process(process, log)


def test_a_server_without_its_database_is_unavailable_with_retry_after(databaseless_server):
    with MemseekClient(databaseless_server, "some-key", retry=NO_RETRY) as client:
        with pytest.raises(Unavailable) as caught:
            client.timeline("contact.err")
    error = caught.value
    assert (error.status, error.code, error.retry_after) == (503, "database_unavailable", 5.0)
    assert isinstance(error, ServerError) and not isinstance(error, ClientError)


@pytest.mark.parametrize(("reply", "cls", "code"), [
    (Reply(403, {"error": "forbidden_origin", "detail": "Origin is not allowed"}), Forbidden, "forbidden_origin"),
    (Reply(429, {"error": "rate_limited", "detail": "slow down"}, (("Retry-After", "2"),)), RateLimited,
     "rate_limited"),
    (Reply(418, {"error": "teapot", "detail": "short and stout"}), ClientError, "teapot"),
    (Reply(502, b"<html>Bad Gateway</html>"), ServerError, "http_502"),
], ids=["403", "429", "unlisted 4xx", "non-JSON 502"])
def test_scripted_statuses_map_to_their_classes(reply, cls, code):
    with ScriptedServer(reply) as server:
        with MemseekClient(server.url, "key", retry=NO_RETRY) as client:
            with pytest.raises(cls) as caught:
                client.collections()
    assert type(caught.value) is cls and (caught.value.status, caught.value.code) == (reply.status, code)
    assert len(server.seen) == 1
    assert caught.value.retry_after == (2.0 if reply.status == 429 else None)
