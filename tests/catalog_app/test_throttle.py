"""Rate limits per key and per workspace (catalog_app.throttle), counted in the real Redis cache:
a key or workspace over its rate gets ``429 rate_limited`` with ``Retry-After`` while other keys,
workspaces and route classes are unaffected, and a refused request ran nothing."""
from __future__ import annotations

import os
import socket
import uuid

import pytest
from rest_framework.test import APIClient

from catalog_app.models import Record
from catalog_app.services.workspaces import api_key_create, workspace_create

REDIS = ("127.0.0.1", 6379)
CACHE_URL = f"redis://{REDIS[0]}:{REDIS[1]}/{os.environ.get('MEMSEEK_TEST_REDIS_DB', '6')}"
# A day-long window: the count cannot roll over to a fresh window in the middle of a test.
EVENT = {"entity": "contact.maria", "type": "event", "text": "Maria confirmed the Q3 budget."}


def redis_client():
    try:
        socket.create_connection(REDIS, timeout=1).close()
    except OSError:
        pytest.skip("needs Redis on 127.0.0.1:6379 for the shared cache (.ci/run starts it)")
    import redis

    return redis.Redis.from_url(CACHE_URL)


def forget_counts(client) -> None:
    for key in client.scan_iter("*rl:*"):
        client.delete(key)


@pytest.fixture
def redis_cache(settings):
    """The default cache on Redis, as a deployment with CACHE_URL has it, with no counts left
    from an earlier test."""
    client = redis_client()
    forget_counts(client)
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}}
    yield client
    forget_counts(client)


def limited(settings, **rates):
    settings.MEMSEEK = {**getattr(settings, "MEMSEEK", {}), **rates}


def client_for(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def assert_rate_limited(response, scope: str, route_class: str, limit: str) -> None:
    assert response.status_code == 429, response.content
    body = response.json()
    assert body["error"] == "rate_limited" and "path" not in body  # about the request as a whole
    assert (body["scope"], body["route_class"], body["limit"]) == (scope, route_class, limit)
    assert body["retry_after_s"] >= 1
    assert response["Retry-After"] == str(body["retry_after_s"])


def test_a_key_over_its_read_rate_is_refused_while_another_key_of_the_workspace_is_not(
        redis_cache, settings, workspace_and_key):
    limited(settings, RATE_LIMIT_KEY_READ="3/d")
    workspace, key = workspace_and_key
    first, second = client_for(key), client_for(api_key_create(workspace=workspace))
    assert [first.get("/collections").status_code for _ in range(3)] == [200] * 3
    assert_rate_limited(first.get("/collections"), "key", "read", "3/d")
    assert second.get("/collections").status_code == 200


def test_a_workspace_over_its_rate_is_refused_for_every_key_while_another_workspace_is_not(
        redis_cache, settings, workspace_and_key, catalog, other_workspace_api):
    limited(settings, RATE_LIMIT_WORKSPACE_BULK="2/d")
    workspace, key = workspace_and_key
    first, second = client_for(key), client_for(api_key_create(workspace=workspace))
    assert first.post("/records", {"records": [EVENT]}, format="json").status_code in (200, 201)
    assert second.post("/records", {"records": [EVENT]}, format="json").status_code in (200, 201)
    before = Record.objects.filter(workspace=workspace).count()
    refused = first.post("/records", {"records": [EVENT]}, format="json")
    assert_rate_limited(refused, "workspace", "bulk", "2/d")
    assert_rate_limited(second.post("/records", {"records": [EVENT]}, format="json"), "workspace", "bulk", "2/d")
    assert Record.objects.filter(workspace=workspace).count() == before  # a refused write ran nothing
    # Another workspace, and another route class of the same workspace, are unaffected.
    assert other_workspace_api.post("/records", {"records": [EVENT]}, format="json").status_code in (200, 201)
    assert first.get("/collections").status_code == 200


def test_every_route_that_takes_a_key_documents_429_with_retry_after():
    from tests.memseek_site.test_openapi_responses import _document

    for route, item in _document()["paths"].items():
        for method, operation in item.items():
            answers = operation["responses"]
            if operation.get("security"):
                assert "rate_limited" in answers["429"]["description"], (method, route)
                assert answers["429"]["headers"]["Retry-After"]["schema"]["minimum"] == 1, (method, route)
                assert "workspace_setting" in answers["409"]["description"], (method, route)
            else:
                assert "429" not in answers, (method, route)  # a public route is never counted


def test_a_refusal_is_the_documented_envelope(redis_cache, settings, workspace_and_key):
    from tests.memseek_site.test_openapi_responses import check

    limited(settings, RATE_LIMIT_KEY_READ="1/d")
    api = client_for(workspace_and_key[1])
    check(api.get("/collections"), "GET", "/collections")
    check(api.get("/collections"), "GET", "/collections", 429)


def test_route_classes_count_apart(redis_cache, settings, workspace_and_key, catalog):
    limited(settings, RATE_LIMIT_KEY_SEARCH="1/d", RATE_LIMIT_KEY_READ="2/d")
    api = client_for(workspace_and_key[1])
    search = {"contract_version": 1, "mode": "lexical", "scope": {}, "query": {"text": "budget"}}
    assert api.post("/search/lexical", search, format="json").status_code == 200
    assert_rate_limited(api.post("/search/lexical", search, format="json"), "key", "search", "1/d")
    assert [api.get("/collections").status_code for _ in range(2)] == [200, 200]
    assert_rate_limited(api.get("/collections"), "key", "read", "2/d")


def test_workspace_settings_override_the_deployment_rates(redis_cache, settings, workspace_and_key):
    limited(settings, RATE_LIMIT_KEY_READ="1/d")
    workspace, key = workspace_and_key
    workspace.settings = {"limits.keyRate": {"read": ""}, "limits.workspaceRate": {"read": "3/d"}}
    workspace.save()
    api = client_for(key)
    assert [api.get("/collections").status_code for _ in range(3)] == [200] * 3
    assert_rate_limited(api.get("/collections"), "workspace", "read", "3/d")


@pytest.mark.parametrize("stored, setting", [
    ({"limits.keyRate": {"read": "fast"}}, "limits.keyRate.read"),
    ({"limits.keyRate": {"read": 5}}, "limits.keyRate.read"),
    ({"limits.keyRate": {"write": "1/s"}}, "limits.keyRate.write"),
    ({"limits.workspaceRate": "1/s"}, "limits.workspaceRate"),
])
def test_a_bad_stored_rate_is_a_workspace_setting_error(redis_cache, settings, workspace_and_key, stored, setting):
    workspace, key = workspace_and_key
    workspace.settings = stored
    workspace.save()
    response = client_for(key).get("/collections")
    assert response.status_code == 409, response.content
    assert (response.json()["error"], response.json()["setting"]) == ("workspace_setting", setting)


def test_public_routes_and_unauthenticated_requests_are_not_counted(redis_cache, settings, db):
    limited(settings, RATE_LIMIT_KEY_READ="1/d", RATE_LIMIT_WORKSPACE_READ="1/d")
    anonymous = APIClient()
    assert [anonymous.get("/health").status_code for _ in range(3)] == [200] * 3
    assert anonymous.get("/collections").status_code == 401
    assert list(redis_cache.scan_iter("*rl:*")) == []


def test_no_limit_is_the_default_and_counts_nothing(redis_cache, api):
    assert [api.get("/collections").status_code for _ in range(5)] == [200] * 5
    assert list(redis_cache.scan_iter("*rl:*")) == []


def test_an_unreachable_cache_refuses_nothing(settings, workspace_and_key):
    """Rate limits fail open: a cache that is down must not take the API down with it."""
    limited(settings, RATE_LIMIT_KEY_READ="1/d")
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                   "LOCATION": "redis://127.0.0.1:1/0"}}
    api = client_for(workspace_and_key[1])
    assert [api.get("/collections").status_code for _ in range(3)] == [200] * 3


def test_mcp_calls_count_once_as_the_mcp_request(redis_cache, settings, workspace_and_key, catalog):
    """A tool call runs a route in-process for the /mcp request's caller: the /mcp request is
    what counts (a search request), not the read route the tool ran."""
    from tests.retrieval_app.test_mcp_endpoint import rpc

    limited(settings, RATE_LIMIT_KEY_SEARCH="2/d", RATE_LIMIT_KEY_READ="1/d")
    api = client_for(workspace_and_key[1])
    for _ in range(2):
        response = rpc(api, "tools/call", {"name": "open_record", "arguments": {"id": str(uuid.uuid4())}})
        assert response.status_code == 200, response.content
        assert "rate_limited" not in response.content.decode()
    assert_rate_limited(rpc(api, "tools/list"), "key", "search", "2/d")
    assert api.get("/collections").status_code == 200  # the tools' reads were not counted


def test_a_second_workspace_never_shares_a_counter(redis_cache, settings, db):
    limited(settings, RATE_LIMIT_WORKSPACE_READ="1/d")
    clients = [client_for(workspace_create(name=f"rate-{n}")[1]) for n in range(3)]
    assert [client.get("/collections").status_code for client in clients] == [200] * 3
    assert [client.get("/collections").status_code for client in clients] == [429] * 3
