"""The SDK's search side against a live server: ``POST /search``, ``GET /search``, views and
the rank schema."""
from __future__ import annotations

import pytest

from memseek_client import MemseekClient, NotFound, RecordInput, Unprocessable
from memseek_client.models import RankSchema, SearchHit, SearchResponse, ViewList, ViewQueryResult

from .conftest import LIVE

pytestmark = LIVE
TEXTS = ("Maria moved the budget review to Tuesday.", "Maria's daughter started school in Lyon.",
         "The quarterly budget was approved by finance.")


@pytest.fixture(scope="module")
def ids(live):
    with live.client() as memseek:
        inserted = memseek.write_records([RecordInput(entity="contact.maria", collection="main", type="note",
                                                      text=text) for text in TEXTS]).inserted
    return [outcome.id for outcome in inserted]


def test_post_search_returns_typed_hits_with_what_include_asked_for(client, ids):
    response = client.search("daughter school Lyon", mode="text", scope={"entities": ["contact.maria"]}, k=2,
                             include=["text", "entity"], render=True)
    assert isinstance(response, SearchResponse) and isinstance(response.hits[0], SearchHit)
    assert [hit.id for hit in response.hits] == [ids[1]] and response.hits[0].rank == 1
    assert response.hits[0].text == TEXTS[1] and response.hits[0].entity == "contact.maria"
    assert response.hits[0].occurred_at is None and TEXTS[1] in response.rendered
    hybrid = client.search("budget", mode="hybrid", scope={"entities": ["contact.maria"]}, k=2)
    assert len(hybrid.hits) == 2 and {hit.id for hit in hybrid.hits} <= set(ids)


def test_get_search_is_the_query_string_form(client, ids):
    response = client.search_get("quarterly budget finance", entity="contact.maria", k=1)
    assert [hit.id for hit in response.hits] == [ids[2]]


def test_a_bad_search_spec_names_its_path(client):
    with pytest.raises(Unprocessable) as caught:
        client.search("budget", mode="sideways")
    assert caught.value.code == "request_schema" and caught.value.path == "mode"


def test_views_list_and_a_view_query(client, ids):
    views = client.views()
    assert isinstance(views, ViewList) and "customer_context" in {view["name"] for view in views.views}
    result = client.query_view("customer_context", {"entity": "contact.maria", "task": "budget review", "k": 3})
    assert isinstance(result, ViewQueryResult)
    assert result.hits and {hit["id"] for hit in result.hits} <= set(ids)
    assert set(result.input_record_ids) <= set(ids)
    with pytest.raises(NotFound) as caught:
        client.query_view("no_such_view", {})
    assert caught.value.code == "view_not_found"
    with pytest.raises(Unprocessable) as caught:
        client.query_view("customer_context", {"entity": "contact.maria"})
    assert caught.value.code == "view_parameter" and caught.value.path == "task"


def test_the_rank_schema_is_typed(client):
    schema = client.rank_schema()
    assert isinstance(schema, RankSchema) and len(schema.rank_hash) >= 16 and schema.default_candidates > 0
    assert (schema.default_source, schema.default_warning) == ("catalog", None)


def test_another_workspace_finds_none_of_these_records(live, ids):
    with MemseekClient(live.url, live.other_key) as other:
        assert other.search("budget review", mode="text", scope={"entities": ["contact.maria"]}).hits == ()
