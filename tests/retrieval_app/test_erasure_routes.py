"""After ``POST /erase`` of an entity, nothing of it comes back from any reading route (the
cross-workspace test's table of every keyed reading route: search in every mode, lexical, brief,
lookups, ``/retrieve``, ``/context``, timeline, document, views, MCP), receipts keep its ids only,
marked erased, and no table holds a row of it: every column named ``entity``, ``record_id``,
``draft_id`` or holding record ids or seqs, found from ``information_schema``, and every text or
JSON column searched for its words."""
from __future__ import annotations

import json

import pytest
from django.db import connection

from catalog_app.models import Definition, Record
from tests.memseek_site.test_cross_workspace import MARIA, READS, mcp, records, write
from tests.retrieval_app.test_mcp_endpoint import failure

pytestmark = [pytest.mark.django_db, pytest.mark.model]

# Words only MARIA's records hold (tests.memseek_site.test_cross_workspace.records).
HER_WORDS = ("Porto", "CFO", "Tuesday", "confirmed", "finance")
KEPT = "contact.kim"
KEPT_RECORDS = [
    {"entity": KEPT, "collection": "main", "type": "event", "text": "Kim approved the Q3 budget plan."},
    {"entity": KEPT, "collection": "main", "type": "fact", "key": "role", "text": "Kim is the CTO."},
]
# Routes whose request names one of the erased ids or one of her paths: a 404 (naming what was asked).
ASKS_FOR_HER = {("GET", "records/<str:id>"), ("GET", "memory/around"), ("GET", "memory/read"), ("GET", "memory/ls"),
                ("GET", "memory/history")}


@pytest.fixture
def erased_world(catalog, api, settings):
    settings.MEMSEEK = {"TOUCH_ON_READ": False}
    her_ids = write(api, records())
    kim_ids = write(api, KEPT_RECORDS)
    receipt = api.post("/retrieve", {"query": "Q3 budget review CFO Porto"}, format="json").json()["receiptId"]
    delivered = {item["id"] for item in api.get(f"/receipts/{receipt}").json()["items"]}
    assert delivered & set(her_ids), "the receipt must have delivered some of her records to mark"
    counted = api.post("/erase", {"entity": MARIA, "dry_run": True}, format="json").json()["counts"]
    erased = api.post("/erase", {"entity": MARIA}, format="json").json()
    assert erased["counts"] == counted and erased["counts"]["records"] == len(her_ids)
    assert erased["counts"]["receipts_marked"] == 1
    return {"workspace": catalog, "b_ids": her_ids, "kim_ids": kim_ids, "b_receipt": receipt, "a_ids": her_ids}


def test_no_reading_route_returns_anything_of_the_erased_entity(erased_world, api):
    for operation, request in READS.items():
        if operation == ("POST", "evaluate"):
            continue  # echoes the relevance judgements it was sent, which name the erased ids
        response = request(api, erased_world)
        text = json.dumps(response.json())
        assert not [word for word in HER_WORDS if word in text], (operation, text[:500])
        if operation in ASKS_FOR_HER:
            assert response.status_code == 404, (operation, text[:500])
            assert response.json()["error"] in ("record_not_found", "path_not_found")
            continue
        assert response.status_code == 200, (operation, text[:500])
        if operation == ("GET", "receipts/<str:id>"):
            items = response.json()["items"]
            assert [item for item in items if item["id"] in erased_world["b_ids"]] == [
                {"id": item["id"], "erased": True} for item in items if item["id"] in erased_world["b_ids"]]
            continue
        assert not [i for i in erased_world["b_ids"] if i in text], (operation, text[:500])
    # The kept entity is still found, so the routes above were not simply empty.
    kept = api.post("/search", {"q": "Q3 budget", "mode": "hybrid"}, format="json").json()
    assert {hit["id"] for hit in kept["hits"]} & set(erased_world["kim_ids"])


def test_mcp_tools_find_nothing_of_it(erased_world, api):
    for word in HER_WORDS:
        result = mcp(api, "tools/call", {"name": "grep", "arguments": {"q": word}}).json()["result"]
        assert result["structuredContent"]["hits"] == [], word
    opened = mcp(api, "tools/call", {"name": "open_record", "arguments": {"id": erased_world["b_ids"][0]}})
    assert failure(opened.json()["result"])["error"] == "record_not_found"


def test_feedback_on_the_receipt_may_no_longer_name_an_erased_record(erased_world, api):
    receipt, gone = erased_world["b_receipt"], erased_world["b_ids"][0]
    response = api.post(f"/receipts/{receipt}/feedback", {"outcome": "success", "recordIds": [gone]}, format="json")
    assert response.status_code == 422 and response.json()["error"] == "record_not_in_receipt"
    assert api.post(f"/receipts/{receipt}/feedback", {"outcome": "success"}, format="json").status_code == 201


def _columns(*names: str) -> list[tuple[str, str, str]]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT table_name, column_name, data_type FROM information_schema.columns "
                       "WHERE table_schema = current_schema() AND column_name = ANY(%s) ORDER BY 1, 2", [list(names)])
        return cursor.fetchall()


def test_no_table_holds_a_row_of_it(erased_world):
    ids = erased_world["b_ids"]
    found = []
    with connection.cursor() as cursor:
        entity_columns = _columns("entity")
        assert ("catalog_app_record", "entity", "character varying") in entity_columns
        # Other workspaces (an earlier test's committed rows, which the lexical index's unmanaged
        # tables keep through a flush) may hold the same entity and words: the erasure is this
        # workspace's, so a table with a workspace column is read for this workspace only.
        scoped = {table for table, _, _ in _columns("workspace_id")}
        workspace_id = erased_world["workspace"].pk

        def only_here(table: str) -> tuple[str, list]:
            return (" AND workspace_id = %s", [workspace_id]) if table in scoped else ("", [])

        for table, column, _ in entity_columns:
            clause, extra = only_here(table)
            cursor.execute(f'SELECT count(*) FROM "{table}" WHERE "{column}" = %s{clause}', [MARIA, *extra])
            found += [(table, column)] * cursor.fetchone()[0]
        id_columns = _columns("record_id", "draft_id", "id", "derived_from")
        assert len(id_columns) > 10
        for table, column, kind in id_columns:
            if kind == "uuid":
                cursor.execute(f'SELECT count(*) FROM "{table}" WHERE "{column}" = ANY(%s::uuid[])', [ids])
            elif kind == "ARRAY":
                cursor.execute(f'SELECT count(*) FROM "{table}" WHERE "{column}"::text[] && %s::text[]', [ids])
            else:
                continue
            found += [(table, column)] * cursor.fetchone()[0]
        # Every text and JSON column of every table, for her words (receipts keep ids only).
        # The catalog's definitions are the operator's configuration, not memory of anyone: the
        # example's tool descriptions name contact.maria as a sample path, and erasure leaves them.
        texts = [(table, column) for table, column in _columns_of_types("text", "character varying", "jsonb")
                 if table != Definition._meta.db_table]
        for table, column in texts:
            clause, extra = only_here(table)
            cursor.execute(f'SELECT count(*) FROM "{table}" WHERE "{column}"::text ~ %s{clause}',
                           ["|".join(HER_WORDS) + "|" + MARIA.replace(".", r"\.")] + extra)
            found += [(table, column)] * cursor.fetchone()[0]
    assert found == []
    assert Record.objects.filter(workspace=erased_world["workspace"]).count() == len(erased_world["kim_ids"])


def _columns_of_types(*kinds: str) -> list[tuple[str, str]]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT c.table_name, c.column_name FROM information_schema.columns c "
                       "JOIN information_schema.tables t ON t.table_schema = c.table_schema "
                       "AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE' "
                       "WHERE c.table_schema = current_schema() AND c.data_type = ANY(%s) ORDER BY 1, 2", [list(kinds)])
        return cursor.fetchall()


@pytest.mark.parametrize("mode", ["vector", "text", "hybrid", "recent", "structured"])
def test_search_in_every_mode_finds_nothing_of_it(erased_world, api, mode):
    body = {"mode": mode, "scope": {"status": "all"}, "include": ["text"], "render": True}
    if mode in ("vector", "text", "hybrid"):
        body["q"] = "Maria CFO Porto Tuesday budget confirmed finance"
    if mode == "structured":
        body.update(order_by=[{"field": "speaker"}], scope={"status": "all", "collections": ["main"]})
    response = api.post("/search", body, format="json")
    assert response.status_code == 200, response.content
    text = json.dumps(response.json())
    assert not [word for word in HER_WORDS if word in text] and not [i for i in erased_world["b_ids"] if i in text]
    if mode != "structured":
        assert response.json()["hits"], mode  # the kept entity's records are still there to find
