"""Key capabilities and revocation: each keyed route declares the one capability it needs and a
key without it gets ``403 capability_missing``; a revoked key is ``401`` once the per-process key
cache (``API_KEY_CACHE_TTL_S``) lets go of it."""
import re
import uuid

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from catalog_app import auth
from catalog_app.models import CAPABILITIES, ApiKey, Record
from catalog_app.services.workspaces import api_key_create, api_key_revoke
from tests.memseek_site.api_routes import keyed_api_operations

# The capability each route needs. A new route fails test_every_keyed_route_is_in_the_table until
# it is listed here: a read, a write or a review.
NEEDS = {
    ("GET", "collections"): "read",
    ("GET", "context"): "read",
    ("GET", "document"): "read",
    ("GET", "document/history"): "read",
    ("POST", "erase"): "write",
    ("POST", "evaluate"): "read",
    ("GET", "export"): "read",
    ("POST", "import"): "write",
    ("POST", "mcp"): "read",  # each tool call then needs its own route's capability
    ("GET", "memory/around"): "read",
    ("GET", "memory/grep"): "read",
    ("GET", "memory/history"): "read",
    ("GET", "memory/latest"): "read",
    ("GET", "memory/ls"): "read",
    ("GET", "memory/read"): "read",
    ("POST", "memory/search"): "read",
    ("GET", "rank/schema"): "read",
    ("GET", "receipts/<str:id>"): "read",
    ("POST", "receipts/<str:id>/feedback"): "write",
    ("POST", "records"): "write",
    ("GET", "records/<str:id>"): "read",
    ("DELETE", "records/<str:id>"): "write",
    ("POST", "records/<str:id>/approve"): "review",
    ("POST", "records/<str:id>/reject"): "review",
    ("POST", "retrieve"): "read",
    ("GET", "search"): "read",
    ("POST", "search"): "read",
    ("POST", "search/lexical"): "read",
    ("GET", "timeline"): "read",
    ("GET", "tools"): "read",
    ("GET", "views"): "read",
    ("POST", "views/<str:name>/query"): "read",
}


def url_of(route: str) -> str:
    return "/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: str(uuid.uuid4()) if m.group(1) == "id" else "x", route)


def client_with(workspace, capabilities) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key_create(workspace=workspace, capabilities=capabilities)}")
    return client


def call(client, method: str, route: str):
    return getattr(client, method.lower())(url_of(route), {} if method == "POST" else None, format="json")


def test_every_keyed_route_declares_a_known_capability():
    undeclared = [(method, route, view.__name__) for method, route, view in keyed_api_operations()
                  if len(auth.required_capabilities(view, method)) != 1]
    assert not undeclared, f"declare capability = 'read' (or 'write'/'review') on: {undeclared}"


def test_every_keyed_route_is_in_the_table():
    walked = {(method, route): next(iter(auth.required_capabilities(view, method)))
              for method, route, view in keyed_api_operations()}
    assert walked == NEEDS


def test_a_view_that_declares_nothing_needs_every_capability():
    class Undeclared:
        pass

    assert auth.required_capabilities(Undeclared) == frozenset(CAPABILITIES)
    assert auth.required_capabilities(type("Reader", (), {"capability": "read"})) == {"read"}


@pytest.mark.parametrize(("method", "route"), sorted(NEEDS))
def test_a_key_without_the_routes_capability_is_403(catalog, method, route):
    needed = NEEDS[(method, route)]
    lacking = client_with(catalog, [c for c in CAPABILITIES if c != needed])
    response = call(lacking, method, route)
    assert response.status_code == 403
    body = response.json()
    assert body["error"] == "capability_missing" and f"'{needed}'" in body["detail"]
    assert response["Cache-Control"] == "no-store"
    holding = call(client_with(catalog, [needed]), method, route)
    assert holding.status_code not in (401, 403), holding.json()


def test_a_read_key_cannot_write_and_its_refused_write_changes_nothing(catalog):
    reader = client_with(catalog, ["read"])
    response = reader.post("/records", {"records": [{"entity": "user-1", "collection": "main", "type": "note",
                                                     "text": "hi"}]}, format="json")
    assert response.status_code == 403 and response.json()["error"] == "capability_missing"
    assert not Record.objects.exists()
    assert reader.get("/timeline?entity=user-1").status_code == 200


def test_a_key_created_without_capabilities_holds_all_three(workspace):
    assert ApiKey.objects.get(workspace=workspace).capabilities == list(CAPABILITIES)


@pytest.mark.parametrize("capabilities", [[], ["read", "admin"], ["READ"]])
def test_a_key_with_an_unknown_or_no_capability_is_refused(workspace, capabilities):
    with pytest.raises(ValueError):
        api_key_create(workspace=workspace, capabilities=capabilities)
    assert ApiKey.objects.filter(workspace=workspace).count() == 1


def test_the_schema_states_each_routes_capability_and_its_403(db):
    from drf_spectacular.generators import SchemaGenerator

    document = SchemaGenerator().get_schema(request=None, public=True)
    for (method, route), needed in NEEDS.items():
        path = "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)
        operation = document["paths"][path][method.lower()]
        assert operation["x-capability"] == needed and "403" in operation["responses"], (method, path)
    assert "403" not in document["paths"]["/health"]["get"]["responses"]


def _revoked_key(workspace) -> tuple[APIClient, ApiKey]:
    client = client_with(workspace, CAPABILITIES)
    key = ApiKey.objects.filter(workspace=workspace).latest("pk")
    return client, key


def test_a_revoked_key_is_401_once_the_cache_lets_go(catalog, monkeypatch):
    client, key = _revoked_key(catalog)
    clock = [1000.0]
    monkeypatch.setattr(auth.time, "monotonic", lambda: clock[0])
    assert client.get("/collections").status_code == 200  # now cached
    assert api_key_revoke(key=key) is True
    clock[0] += 59  # within API_KEY_CACHE_TTL_S (60): this process still holds the old answer
    assert client.get("/collections").status_code == 200
    clock[0] += 2
    response = client.get("/collections")
    assert response.status_code == 401 and response.json()["error"] == "unauthorized"
    assert api_key_revoke(key=key) is False  # a second revocation changes nothing


@override_settings(MEMSEEK={"API_KEY_CACHE_TTL_S": 0})
def test_with_no_cache_revocation_is_immediate_and_other_keys_keep_working(catalog, api):
    client, key = _revoked_key(catalog)
    assert client.get("/collections").status_code == 200
    api_key_revoke(key=key)
    assert client.get("/collections").status_code == 401
    assert api.get("/collections").status_code == 200


@override_settings(MEMSEEK={"API_KEY_CACHE_TTL_S": 0})
def test_a_changed_capability_set_takes_effect_like_a_revocation(catalog):
    client = client_with(catalog, ["read"])
    assert client.get("/collections").status_code == 200
    ApiKey.objects.filter(workspace=catalog).update(capabilities=["write"])
    assert client.get("/collections").status_code == 403
