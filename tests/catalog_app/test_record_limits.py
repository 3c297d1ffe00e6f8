"""One home for the record field limits (``catalog_app.record_limits``): read from the model, and
every surface that bounds an entity, a key or a dedupe key (the write route, the console form,
export, memory addresses, MCP tool schemas, the OpenAPI document) applies that bound exactly."""
import pytest

from catalog_app.api.records_write import RecordInputSerializer
from catalog_app.models import Record
from catalog_app.record_limits import DEDUPE_KEY_CHARS, ENTITY_CHARS, KEY_CHARS, TYPE_CHARS
from catalog_app.ui.forms import RecordFilterForm
from retrieval_app.memory.addresses import MAX_PATH_CHARS
from retrieval_app.mcp.listing import tools_list


def test_the_limits_are_the_models_column_lengths():
    fields = {name: Record._meta.get_field(name).max_length for name in ("entity", "type", "key", "dedupe_key")}
    assert fields == {"entity": ENTITY_CHARS, "type": TYPE_CHARS, "key": KEY_CHARS, "dedupe_key": DEDUPE_KEY_CHARS}
    # The contract's numbers (a change here is an API change and a migration).
    assert (ENTITY_CHARS, TYPE_CHARS, KEY_CHARS, DEDUPE_KEY_CHARS) == (255, 64, 128, 256)


def test_the_write_serializer_and_console_form_use_them():
    write = RecordInputSerializer().fields
    assert (write["entity"].max_length, write["key"].max_length, write["dedupe_key"].max_length) == \
        (ENTITY_CHARS, KEY_CHARS, DEDUPE_KEY_CHARS)
    form = RecordFilterForm({}, collections=["main"]).fields
    assert (form["entity"].max_length, form["type"].max_length, form["key"].max_length) == \
        (ENTITY_CHARS, TYPE_CHARS, KEY_CHARS)


def test_the_longest_address_escapes_a_longest_entity_and_key():
    assert MAX_PATH_CHARS == len("passages/") + 64 + 1 + 3 * ENTITY_CHARS + 1 + 3 * KEY_CHARS


def test_mcp_ingest_tools_bound_entity_key_and_dedupe_key(catalog, workspace):
    schemas = [tool["input_schema"]["properties"] for tool in tools_list(workspace=workspace)["tools"]
               if "dedupe_key" in tool.get("input_schema", {}).get("properties", {})]
    assert schemas, "the example declaration has an ingest tool"
    for properties in schemas:
        assert properties["entity"]["maxLength"] == ENTITY_CHARS
        assert properties["dedupe_key"]["maxLength"] == DEDUPE_KEY_CHARS
        if "key" in properties:
            assert properties["key"]["maxLength"] == KEY_CHARS


@pytest.mark.parametrize(("field", "limit", "code"), [("entity", ENTITY_CHARS, "entity"),
                                                      ("key", KEY_CHARS, "request_schema"),
                                                      ("dedupe_key", DEDUPE_KEY_CHARS, "request_schema")])
def test_post_records_accepts_the_limit_and_refuses_one_more(api, catalog, field, limit, code):
    item = {"entity": "e", "type": "event", "text": "x"}  # main is a mixed collection: a key is allowed
    over = api.post("/records", {"records": [{**item, field: "a" * (limit + 1)}]}, format="json")
    assert over.status_code == 422, over.json()
    assert (over.json()["error"], over.json()["path"]) == (code, f"records[0].{field}")
    assert not Record.objects.exists()


def test_post_records_accepts_a_longest_entity(api, catalog):
    response = api.post("/records", {"records": [{"entity": "e" * ENTITY_CHARS, "type": "event", "text": "x"}]},
                        format="json")
    assert response.status_code == 200, response.json()
    assert Record.objects.get().entity == "e" * ENTITY_CHARS


def test_export_refuses_an_entity_one_over_the_limit(api, catalog):
    response = api.get("/export", {"entity": "e" * (ENTITY_CHARS + 1)})
    assert response.status_code == 422
    assert response.json()["path"] == "entity"
