"""The OpenAPI request schemas of ``POST /records`` and ``POST /search`` state the rules their
strict readers enforce: the exact key sets (``additionalProperties: false``), batch and length
bounds, name patterns; and the server refuses exactly past those bounds."""
import functools

import pytest
from drf_spectacular.generators import SchemaGenerator

from catalog_app.services.record_input import _FIELDS as RECORD_KEYS
from memseek_site.conf import memseek_setting
from memseek_site.parsing import PUBLIC_NAME
from retrieval_app.feedback import _KEYS as FEEDBACK_KEYS
from retrieval_app.lexical.request import _KEYS as LEXICAL_KEYS
from retrieval_app.lexical.request import _QUERY_KEYS as LEXICAL_QUERY_KEYS
from retrieval_app.memory.brief_request import _KEYS as MEMORY_SEARCH_KEYS
from retrieval_app.request import _KEYS as RETRIEVE_KEYS
from search_app.engine.spec import _TOP_KEYS as SEARCH_KEYS


@functools.cache
def components() -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)["components"]["schemas"]


@pytest.mark.parametrize(("component", "keys"), [("RecordBatchRequest", {"records"}),
                                                 ("RecordInputRequest", RECORD_KEYS),
                                                 ("SearchSpecRequest", SEARCH_KEYS),
                                                 ("RetrieveRequestRequest", RETRIEVE_KEYS),
                                                 ("FeedbackRequestRequest", FEEDBACK_KEYS),
                                                 ("MemorySearchRequestRequest", MEMORY_SEARCH_KEYS),
                                                 ("LexicalRequestRequest", LEXICAL_KEYS),
                                                 ("LexicalQueryRequest", LEXICAL_QUERY_KEYS),
                                                 ("EvaluateRequestRequest", {"queries", "k", "target"})])
def test_closed_request_objects_name_exactly_the_readers_keys(db, component, keys):
    schema = components()[component]
    assert schema["additionalProperties"] is False
    assert set(schema["properties"]) == set(keys)


def test_open_request_objects_stay_open(db):
    # View parameters are the view's own names: the document cannot list them; their values are
    # whatever the transport layer stores.
    storable = {"$ref": "#/components/schemas/StorableJSON"}
    assert components()["ViewParametersRequest"]["additionalProperties"] == storable


def test_the_bounds_in_the_document_are_the_settings(db):
    batch = components()["RecordBatchRequest"]["properties"]["records"]
    assert (batch["minItems"], batch["maxItems"]) == (1, memseek_setting("MAX_BATCH"))
    record = components()["RecordInputRequest"]["properties"]
    assert record["text"]["maxLength"] == memseek_setting("MAX_TEXT_CHARS")
    assert record["collection"]["pattern"] == record["type"]["pattern"] == PUBLIC_NAME.pattern
    assert (record["entity"]["maxLength"], record["key"]["maxLength"]) == (255, 128)
    assert components()["SearchSpecRequest"]["properties"]["q"]["maxLength"] == memseek_setting("MAX_QUERY_CHARS")


def event(**fields) -> dict:
    return {"entity": "user-1", "collection": "main", "type": "note", "text": "hi", **fields}


@pytest.mark.parametrize(("body", "code", "path"), [
    ({"records": []}, "request_schema", "records"),
    ({"records": [event()] * (100 + 1)}, "batch_too_large", "records"),
    ({"records": [event()], "extra": 1}, "request_schema", "extra"),
    ({"records": [event(extra=1)]}, "request_schema", "records[0].extra"),
    ({"records": [event(type="Note")]}, "request_schema", "records[0].type"),
    ({"records": [event(collection="x" * 65)]}, "request_schema", "records[0].collection"),
    ({"records": [event(text="a" * (65_536 + 1))]}, "text_too_large", "records[0].text"),
    ({"records": [event(entity="e" * 256)]}, "entity", "records[0].entity"),
])
def test_the_server_refuses_past_each_documented_records_bound(api, catalog, body, code, path):
    response = api.post("/records", body, format="json")
    assert response.status_code == 422, response.json()
    assert (response.json()["error"], response.json()["path"]) == (code, path)


def test_what_the_document_allows_at_the_edges_is_accepted(api, catalog):
    # schemathesis found the document stricter than the server here once (minLength 1 on text).
    assert "minLength" not in components()["RecordInputRequest"]["properties"]["text"]
    edge = event(text="", entity="e" * 255, key="k" * 128, type="a" + "b" * 63)
    response = api.post("/records", {"records": [edge] * 1}, format="json")
    assert response.status_code == 200, response.json()


def test_the_server_refuses_a_query_past_its_documented_length_only(api, catalog):
    limit = memseek_setting("MAX_QUERY_CHARS")
    too_long = api.post("/search", {"q": "a" * (limit + 1), "mode": "text"}, format="json")
    assert (too_long.status_code, too_long.json()["error"]) == (422, "query_too_long")
    assert api.post("/search", {"q": "a" * limit, "mode": "text"}, format="json").status_code == 200
    unknown = api.post("/search", {"q": "a", "mode": "text", "extra": 1}, format="json")
    assert (unknown.status_code, unknown.json()["path"]) == (422, "extra")
