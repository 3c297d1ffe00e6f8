"""Real responses of every route match the generated OpenAPI document.

The services build response bodies as dicts; DRF serializers describe the same shapes for the
schema. Each test below calls routes with real data and validates the JSON against the schema
drf-spectacular generates for that route and status, made strict: an object may hold only the
properties its serializer names (unless it declares ``additionalProperties``), every required
one, with the declared types and nullability. A key added to a dict but not to its serializer,
a serializer field the dict no longer sends, or a changed type fails here, so the two cannot
drift apart.
"""
from __future__ import annotations

import copy
import functools

import pytest
from drf_spectacular.generators import SchemaGenerator
from jsonschema import Draft202012Validator, FormatChecker

from catalog_app.models import Record
from catalog_app.services.enrichment import records_enrich
from catalog_app.services.record_ingest import record_ingest_batch
from tests.retrieval_app.factories import event, fact, load, policy, write

MARIA = "contact.maria"


@functools.cache
def _document() -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)


def _strict(node):
    """An OpenAPI 3.0 schema object as a strict JSON Schema: ``nullable`` becomes a ``null``
    alternative, and objects with named properties admit no other property."""
    if isinstance(node, list):
        return [_strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _strict(value) for key, value in node.items()}
    if node.get("type") == "object" and "properties" in node:
        node.setdefault("additionalProperties", False)
    if node.pop("nullable", False):
        return {"anyOf": [node, {"type": "null"}]}
    return node


def response_schema(method: str, route: str, status: int) -> dict:
    assert (method, route) in COVERED
    document = _document()
    response = document["paths"][route][method.lower()]["responses"][str(status)]
    schema = response["content"]["application/json"]["schema"]
    return {**_strict(copy.deepcopy(schema)), "components": _strict(copy.deepcopy(document["components"]))}


def check(response, method: str, route: str, status: int = 200) -> dict:
    """Assert ``response`` has ``status`` and a body the schema of ``route`` allows; return it."""
    body = response.json()
    assert response.status_code == status, body
    validator = Draft202012Validator(response_schema(method, route, status), format_checker=FormatChecker())
    problems = [f"{'/'.join(map(str, error.absolute_path)) or '(body)'}: {error.message}"
                for error in validator.iter_errors(body)]
    assert not problems, f"{method} {route} {status} drifted from its serializer:\n" + "\n".join(problems)
    return body


# Every documented operation; a new route fails the coverage test until it is exercised here.
COVERED = {
    ("GET", "/health"), ("GET", "/collections"), ("GET", "/rank/schema"), ("POST", "/records"),
    ("GET", "/records/{id}"), ("GET", "/timeline"), ("GET", "/document"), ("GET", "/document/history"),
    ("POST", "/search"), ("GET", "/search"), ("GET", "/views"), ("POST", "/views/{name}/query"), ("GET", "/context"),
    ("POST", "/records/{id}/approve"), ("POST", "/records/{id}/reject"), ("POST", "/retrieve"),
    ("GET", "/receipts/{id}"), ("POST", "/receipts/{id}/feedback"), ("POST", "/evaluate"),
    ("GET", "/tools"), ("POST", "/mcp"),  # checked in tests/retrieval_app/test_mcp_endpoint.py
    ("POST", "/search/lexical"),
    ("DELETE", "/records/{id}"), ("POST", "/erase"),  # checked in tests/catalog_app/test_record_erase.py
}
COVERED |= {("GET", f"/memory/{route}") for route in ("grep", "latest", "around", "read", "ls", "history")}
COVERED |= {("POST", "/memory/search")}  # tests/memseek_site/test_openapi_memory_search.py
COVERED |= {("GET", "/export"), ("POST", "/import")}  # tests/catalog_app/test_import_errors.py


def test_every_documented_operation_is_checked_here():
    documented = {(method.upper(), route) for route, operations in _document()["paths"].items()
                  for method in operations}
    assert documented == COVERED


def test_the_checker_rejects_a_key_the_serializer_does_not_name():
    schema = response_schema("GET", "/health", 200)
    assert Draft202012Validator(schema).is_valid({"ok": True, "db": True})
    assert not Draft202012Validator(schema).is_valid({"ok": True, "db": True, "extra": 1})
    assert not Draft202012Validator(schema).is_valid({"ok": True})


def test_record_and_search_routes_match_the_schema(api, catalog):
    check(api.get("/health"), "GET", "/health")
    check(api.get("/collections"), "GET", "/collections")
    check(api.get("/rank/schema"), "GET", "/rank/schema")
    written = check(api.post("/records", {"records": [
        {"entity": MARIA, "collection": "main", "type": "event", "text": "Maria confirmed the Q3 budget."},
        {"entity": MARIA, "collection": "main", "type": "fact", "key": "role", "text": "Maria is the CFO."},
    ]}, format="json"), "POST", "/records")
    ids = [outcome["id"] for outcome in written["inserted"]]
    records_enrich(record_ids=ids)
    check(api.get(f"/records/{ids[0]}"), "GET", "/records/{id}")
    check(api.get(f"/timeline?entity={MARIA}"), "GET", "/timeline")
    check(api.get(f"/document?entity={MARIA}"), "GET", "/document")
    check(api.get(f"/document/history?entity={MARIA}&collection=main&key=role"), "GET", "/document/history")
    check(api.post("/search", {"q": "Q3 budget", "mode": "hybrid", "scope": {"entities": [MARIA]},
                               "include": ["text", "scores", "occurred_at"], "render": True}, format="json"),
          "POST", "/search")
    check(api.get("/search?q=budget"), "GET", "/search")
    check(api.get("/views"), "GET", "/views")
    check(api.post("/views/customer_context/query", {"entity": MARIA, "task": "the Q3 budget"}, format="json"),
          "POST", "/views/{name}/query")
    check(api.get(f"/context?entity={MARIA}&task=budget&budget=400"), "GET", "/context")


def test_review_routes_match_the_schema(api, catalog):
    [approved, rejected] = [
        str(record_ingest_batch(workspace=catalog, items=[
            {"entity": MARIA, "collection": "main", "type": "fact", "key": key, "status": "draft", "text": text}
        ]).inserted[0].id) for key, text in (("role", "Maria is the CEO."), ("city", "Maria lives in Porto."))]
    check(api.post(f"/records/{approved}/approve"), "POST", "/records/{id}/approve")
    check(api.post(f"/records/{rejected}/reject"), "POST", "/records/{id}/reject")
    assert Record.objects.filter(workspace=catalog, status="active", key="role").exists()


def test_retrieval_routes_match_the_schema(api, workspace):
    load(workspace)
    ids = write(workspace, [fact("budget", "The Q3 budget is 2M."), event("Maria asked about the Q3 budget."),
                            policy("Never quote prices.")])
    records_enrich(record_ids=ids)
    context = check(api.post("/retrieve", {"query": "Q3 budget", "explain": True}, format="json"),
                    "POST", "/retrieve")
    receipt = context["receiptId"]
    check(api.get(f"/receipts/{receipt}"), "GET", "/receipts/{id}")
    check(api.post(f"/receipts/{receipt}/feedback", {"outcome": "success", "dedupeKey": "run-1"}, format="json"),
          "POST", "/receipts/{id}/feedback", 201)
    check(api.post(f"/receipts/{receipt}/feedback", {"outcome": "success", "dedupeKey": "run-1"}, format="json"),
          "POST", "/receipts/{id}/feedback", 200)
    check(api.post("/evaluate", {"k": 5, "queries": [{"query": "Q3 budget", "relevant": {ids[0]: 2}}]},
                   format="json"), "POST", "/evaluate")
    lexical = check(api.post("/search/lexical", {"contract_version": 1, "mode": "lexical", "scope": {},
                                                 "query": {"text": "Q3 budget", "scan_limit": 2}}, format="json"),
                    "POST", "/search/lexical")
    assert lexical["page"]["hits"] and lexical["page"]["next_after"]


@pytest.mark.parametrize(("method", "route", "url", "body", "status"), [
    ("POST", "/search", "/search", {"mode": "recent", "k": 0}, 422),
    ("POST", "/search", "/search", {"q": "x" * 9000, "mode": "text"}, 422),
    ("GET", "/records/{id}", "/records/00000000-0000-0000-0000-000000000000", None, 404),
    ("GET", "/records/{id}", "/records/not-a-uuid", None, 422),
    ("POST", "/views/{name}/query", "/views/nope/query", {}, 404),
    ("GET", "/timeline", "/timeline", None, 422),
    ("POST", "/search/lexical", "/search/lexical", {"contract_version": 1, "mode": "text"}, 400),
])
def test_error_envelopes_match_the_schema(api, catalog, method, route, url, body, status):
    response = api.post(url, body, format="json") if method == "POST" else api.get(url)
    check(response, method, route, status)


def test_a_budget_too_small_matches_its_documented_shape(api, workspace):
    load(workspace)
    write(workspace, [policy(f"Policy {n}: " + "never disclose budget figures to anyone outside finance " * 3)
                      for n in range(6)])
    body = check(api.post("/retrieve", {"query": "budget", "tokenBudget": 256}, format="json"),
                 "POST", "/retrieve", 422)
    assert (body["error"], body["path"]) == ("CONTEXT_BUDGET_TOO_SMALL", "tokenBudget")


def test_memory_lookup_routes_match_the_schema(api, catalog):
    from tests.catalog_app.factories import record_make

    turns = [record_make(catalog, entity=MARIA, text=f"turn {i} E-17", content={"speaker": "user", "thread": "t"})
             for i in range(3)]
    record_make(catalog, entity=MARIA, key="role", type="fact", text="Maria is the CFO.")
    record_make(catalog, entity=MARIA, key="role", type="fact", text="Maria is the CEO.")
    middle = f"passages/main/{MARIA}/{turns[1].id}"
    check(api.get("/memory/grep?q=e-17&limit=1"), "GET", "/memory/grep")
    check(api.get("/memory/latest?after=2000-01-01"), "GET", "/memory/latest")
    check(api.get(f"/memory/around?path={middle}"), "GET", "/memory/around")
    check(api.get(f"/memory/read?path={middle}"), "GET", "/memory/read")
    check(api.get(f"/memory/read?path=facts/main/{MARIA}/role"), "GET", "/memory/read")
    for path in ("", "passages", "facts", "passages/main", f"passages/main/{MARIA}", f"facts/main/{MARIA}"):
        check(api.get(f"/memory/ls?path={path}&limit=1"), "GET", "/memory/ls")
    check(api.get(f"/memory/history?path=facts/main/{MARIA}/role&limit=1"), "GET", "/memory/history")
    check(api.get("/memory/read?path=facts/main/nobody/role"), "GET", "/memory/read", 404)
    check(api.get("/memory/ls?path=nowhere"), "GET", "/memory/ls", 422)
