"""The MCP tool kinds that change memory beyond ``remember``: ``forget`` (an entity's records in
the one collection the declaration binds, destructive, needing ``write``) and ``feedback`` (an
outcome on the ``receiptId`` ``search_memory`` returned), through ``/mcp`` as an agent calls them."""
from __future__ import annotations

import shutil

import pytest
import yaml
from rest_framework.test import APIClient

from catalog_app.models import Record
from catalog_app.services.catalog_load import catalog_load
from catalog_app.services.workspaces import api_key_create
from retrieval_app.models import Feedback
from tests.conftest import EXAMPLE_CATALOG
from tests.memseek_site.test_cross_workspace import mcp, write
from tests.retrieval_app.test_mcp_endpoint import failure

pytestmark = pytest.mark.django_db


def _call(api, name: str, arguments: dict) -> dict:
    response = mcp(api, "tools/call", {"name": name, "arguments": arguments})
    assert response.status_code == 200, response.content
    return response.json()["result"]


def _listed(api) -> dict:
    return {tool["name"]: tool for tool in api.get("/tools").json()["tools"]}


def _write(api, *items) -> list[str]:
    response = api.post("/records", {"records": list(items)}, format="json")
    assert response.status_code == 200, response.content
    return [outcome["id"] for outcome in response.json()["inserted"]]


def test_forget_is_destructive_bound_to_its_collection_and_takes_no_collection_argument(catalog, api):
    forget = _listed(api)["forget"]
    assert forget["annotations"] == {"readOnlyHint": False, "idempotentHint": True, "destructiveHint": True,
                                     "openWorldHint": False}
    assert forget["binding"]["kind"] == "forget" and forget["binding"]["name"] == "main"
    assert set(forget["input_schema"]["properties"]) == {"entity", "dry_run"}
    assert forget["input_schema"]["required"] == ["entity"] and forget["route"]["path"] == "/erase"
    rate = _listed(api)["rate_context"]
    assert rate["annotations"]["readOnlyHint"] is False and rate["annotations"]["destructiveHint"] is False
    assert rate["input_schema"]["required"][:2] == ["receiptId", "outcome"]
    assert "id" not in rate["input_schema"]["properties"]


def test_forget_erases_the_entity_in_its_collection_only(catalog, api):
    in_main = _write(api, {"entity": "contact.zed", "collection": "main", "type": "note", "text": "Zed note"})
    other = _write(api, {"entity": "contact.amy", "collection": "main", "type": "note", "text": "Amy note"})
    counted = _call(api, "forget", {"entity": "contact.zed", "dry_run": True})
    assert not counted["isError"] and counted["structuredContent"]["counts"]["records"] == 1
    assert Record.objects.filter(pk__in=in_main).exists()
    done = _call(api, "forget", {"entity": "contact.zed"})
    assert not done["isError"] and done["structuredContent"]["dry_run"] is False
    assert not Record.objects.filter(pk__in=in_main).exists() and Record.objects.filter(pk__in=other).exists()


@pytest.mark.parametrize(("arguments", "path"), [
    ({"entity": "contact.zed", "collection": "tickets"}, "collection"),
    ({"entity": "contact.zed", "force": True}, "force"),
    ({}, "entity"),
    ({"entity": 5}, "entity"),
    ({"entity": "contact.zed", "dry_run": "yes"}, "dry_run"),
])
def test_bad_forget_arguments_are_an_error_result_naming_them_and_erase_nothing(catalog, api, arguments, path):
    kept = _write(api, {"entity": "contact.zed", "collection": "main", "type": "note", "text": "Zed note"})
    result = _call(api, "forget", arguments)
    assert failure(result)["path"] == path
    assert Record.objects.filter(pk__in=kept).exists()


def test_forget_needs_the_write_capability(catalog, api):
    kept = _write(api, {"entity": "contact.zed", "collection": "main", "type": "note", "text": "Zed note"})
    reader = APIClient()
    reader.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key_create(workspace=catalog, capabilities=['read'])}")
    result = _call(reader, "forget", {"entity": "contact.zed"})
    assert failure(result)["error"] == "capability_missing"
    assert failure(result)["status"] == 403 and Record.objects.filter(pk__in=kept).exists()


@pytest.mark.model
def test_feedback_takes_the_receipt_id_search_memory_returned(catalog, api):
    write(api, [{"entity": "contact.zed", "collection": "main", "type": "note", "text": "Zed renewed the contract."}])
    recalled = _call(api, "search_memory", {"query": "contract renewal", "entity": "contact.zed"})
    receipt = recalled["structuredContent"]["receiptId"]
    rated = _call(api, "rate_context", {"receiptId": receipt, "outcome": "success", "comment": "helped"})
    assert not rated["isError"] and rated["structuredContent"]["receiptId"] == receipt
    assert Feedback.objects.get().outcome == "success"
    missing = _call(api, "rate_context", {"outcome": "success"})
    assert failure(missing)["path"] == "receiptId"
    wrong = _call(api, "rate_context", {"receiptId": receipt, "outcome": "great"})
    assert failure(wrong)["path"] == "outcome"
    unknown = _call(api, "rate_context", {"receiptId": "00000000-0000-0000-0000-000000000000", "outcome": "success"})
    assert failure(unknown)["error"] == "receipt_not_found"
    assert Feedback.objects.count() == 1


def test_a_forget_tool_bound_to_an_entity_scope_forgets_nothing_outside_it(catalog, api, tmp_path):
    body = yaml.safe_load((EXAMPLE_CATALOG / "mcp" / "agent.yaml").read_text())
    body["version"] = 2
    body["tools"] = [{"name": "forget_contact", "kind": "forget", "collection": {"name": "main", "version": 1},
                      "entity_prefix": "contact.", "description": "Forget one contact."}]
    directory = tmp_path / "catalog"
    shutil.copytree(EXAMPLE_CATALOG, directory)
    (directory / "mcp" / "agent.yaml").write_text(yaml.safe_dump(body, sort_keys=False))
    catalog_load(workspace=catalog, directory=directory)
    listed = _listed(api)["forget_contact"]
    assert listed["binding"]["entity_prefix"] == "contact."
    assert listed["input_schema"]["properties"]["entity"]["pattern"] == r"^contact\."
    account = _write(api, {"entity": "account.zed", "collection": "main", "type": "note", "text": "Zed account"})
    refused = _call(api, "forget_contact", {"entity": "account.zed"})
    assert failure(refused)["path"] == "entity"
    assert Record.objects.filter(pk__in=account).exists()
    contact = _write(api, {"entity": "contact.zed", "collection": "main", "type": "note", "text": "Zed contact"})
    assert _call(api, "forget_contact", {"entity": "contact.zed"})["structuredContent"]["counts"]["records"] == 1
    assert not Record.objects.filter(pk__in=contact).exists()
