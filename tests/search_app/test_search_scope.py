"""Scopes narrow what a search may return, and the rules no scope can lift: own workspace,
ready, not retracted, current unless history is asked for (views-and-search "Scopes";
reference 2.2 and A.1 step 5; 7.2 item 6). Real PostgreSQL and the real MiniLM model."""
from datetime import datetime, timedelta, timezone

import pytest

from catalog_app.services.catalog_load import catalog_load
from catalog_app.services.workspaces import workspace_create
from tests.conftest import EXAMPLE_CATALOG
from tests.search_app.search_factories import (enrich, ingest, ingest_ready, item, load_search_fields_catalog,
                                               one)

pytestmark = pytest.mark.model

T0 = datetime(2026, 7, 1, 10, 0, tzinfo=timezone.utc)
ALL_MODES = [{"mode": "recent"}, {"mode": "text", "q": "memo"}, {"mode": "vector", "q": "memo"},
             {"mode": "hybrid", "q": "memo"}, {"mode": "structured", "order_by": [{"field": "speaker"}]}]
MODE_IDS = [body["mode"] for body in ALL_MODES]


def found(api, scope: dict | None = None, query: dict | None = None, **extra) -> list[str]:
    """Ids returned by a search (recent mode unless ``query`` says otherwise)."""
    body = {**(query or {"mode": "recent"}), **extra}
    if scope is not None:
        body["scope"] = scope
    response = api.post("/search", body, format="json")
    assert response.status_code == 200, response.json()
    return [hit["id"] for hit in response.json()["hits"]]


def ids(*records) -> list[str]:
    return [str(record) for record in records]


def at(hours: float) -> str:
    return (T0 + timedelta(hours=hours)).isoformat()


# --- entities, types, collections, versions of a collection -----------------------------------

def test_entities_scope_keeps_only_those_entities(catalog, api):
    maria, _bob, ana = ingest_ready(catalog, [item("memo", entity=name) for name in ("maria", "bob", "ana")])
    assert sorted(found(api, {"entities": ["maria", "ana"]})) == sorted(ids(maria, ana))
    assert found(api, {"entities": ["nobody"]}) == []


def test_types_scope_keeps_only_those_types(catalog, api):
    event, _note = ingest_ready(catalog, [item("memo", type="event"), item("memo", type="note")])
    assert found(api, {"types": ["event"]}) == ids(event)


def test_collections_scope_keeps_only_those_collections(catalog, api):
    main, ticket = ingest_ready(catalog, [item("memo"),
                                          item("memo", collection="tickets", content={"channel": "email"})])
    assert found(api, {"collections": ["main"]}) == ids(main)
    assert found(api, {"collections": ["tickets"]}) == ids(ticket)
    assert sorted(found(api, {})) == sorted(ids(main, ticket))


def test_collection_versions_pin_exact_versions(workspace, api):
    load_search_fields_catalog(workspace)
    old, new = ingest_ready(workspace, [item("memo", collection="notes", collection_version=1),
                                        item("memo", collection="notes", collection_version=2)])
    notes = {"collections": ["notes"]}
    assert sorted(found(api, notes)) == sorted(ids(old, new))  # every loaded version, not only the active one
    assert found(api, {**notes, "collection_versions": {"notes": [1]}}) == ids(old)
    assert found(api, {**notes, "collection_versions": {"notes": [2]}}) == ids(new)
    assert sorted(found(api, {**notes, "collection_versions": {"notes": [2, 1]}})) == sorted(ids(old, new))


def test_pinning_a_version_that_does_not_exist_is_unknown_collection(workspace, api):
    load_search_fields_catalog(workspace)
    response = api.post("/search", {"mode": "recent", "scope": {"collections": ["notes"],
                                                                "collection_versions": {"notes": [3]}}}, format="json")
    assert response.status_code == 422
    assert response.json()["error"] == "unknown_collection"
    assert response.json()["path"] == "scope.collection_versions.notes[0]"


# --- status and keyed ---------------------------------------------------------------------------

def test_status_scope_chooses_active_draft_or_both(catalog, api):
    active, draft = ingest_ready(catalog, [item("memo", key="plan"), item("memo", key="plan", status="draft")])
    assert found(api) == ids(active)  # active is the default
    assert found(api, {"status": "active"}) == ids(active)
    assert found(api, {"status": "draft"}) == ids(draft)
    # A draft is its own lane: it never replaces the current active value.
    assert sorted(found(api, {"status": "all"})) == sorted(ids(active, draft))


def test_keyed_scope_separates_named_facts_from_events(catalog, api):
    fact, event = ingest_ready(catalog, [item("memo", key="plan"), item("memo")])
    assert found(api, {"keyed": True}) == ids(fact)
    assert found(api, {"keyed": False}) == ids(event)
    assert sorted(found(api, {"keyed": "any"})) == sorted(ids(fact, event))


# --- time and depth -----------------------------------------------------------------------------

@pytest.mark.parametrize("query", ALL_MODES, ids=MODE_IDS)
def test_time_bounds_are_strict(catalog, api, query):
    _on_after, inside, _on_before = ingest_ready(catalog, [item("memo", occurred_at=at(h)) for h in (0, 1, 2)])
    scope = {"collections": ["main"], "occurred_after": at(0), "occurred_before": at(2)}
    assert found(api, scope, query) == ids(inside)


def test_time_bounds_compare_instants_whatever_the_offset_notation(catalog, api):
    _early, late = ingest_ready(catalog, [item("memo", occurred_at="2026-07-01T10:00:00Z"),
                                         item("memo", occurred_at="2026-07-01T12:00:00Z")])
    # 13:00+02:00 is 11:00Z: only the 12:00Z record is after it.
    assert found(api, {"occurred_after": "2026-07-01T13:00:00+02:00"}) == ids(late)
    assert found(api, {"occurred_after": "2026-07-01T10:00:00+00:00"}) == ids(late)


def test_depth_lte_limits_how_derived_a_record_may_be(catalog, api):
    origin = one(catalog, "memo")
    child = one(catalog, "memo", derived_from=[str(origin)])
    grandchild = one(catalog, "memo", derived_from=[str(child)])
    assert found(api, {"depth_lte": 0}) == ids(origin)
    assert sorted(found(api, {"depth_lte": 1})) == sorted(ids(origin, child))
    assert len(found(api, {})) == 3
    body = api.post("/search", {"mode": "recent", "include": ["depth"]}, format="json").json()
    assert {hit["id"]: hit["depth"] for hit in body["hits"]} == {str(origin): 0, str(child): 1, str(grandchild): 2}


# --- current values and history ---------------------------------------------------------------

@pytest.mark.parametrize("query", ALL_MODES, ids=MODE_IDS)
def test_a_newer_value_hides_the_older_one_unless_history_is_asked_for(catalog, api, query):
    old = one(catalog, "memo: plan is A", key="plan", content={"speaker": "ana"})
    new = one(catalog, "memo: plan is B", key="plan", content={"speaker": "ana"})
    other_key = one(catalog, "memo: budget", key="budget", content={"speaker": "ana"})
    assert sorted(found(api, {"collections": ["main"]}, query)) == sorted(ids(new, other_key))
    assert sorted(found(api, {"collections": ["main"], "versions": "all"}, query)) == sorted(ids(old, new, other_key))


def test_lanes_are_per_entity_and_events_are_never_superseded(catalog, api):
    ana = one(catalog, "memo", key="plan", entity="ana")
    bob = one(catalog, "memo", key="plan", entity="bob")
    first_event, second_event = ingest_ready(catalog, [item("memo"), item("memo")])
    assert sorted(found(api)) == sorted(ids(ana, bob, first_event, second_event))


def test_an_unready_newer_value_hides_the_ready_older_one(catalog, api):
    old = one(catalog, "memo: plan is A", key="plan")
    (pending,) = ingest(catalog, [item("memo: plan is B", key="plan")])  # not enriched: still processing
    assert found(api, {"versions": "current"}) == []
    assert found(api, {"versions": "current"}, {"mode": "hybrid", "q": "plan"}) == []
    assert found(api, {"versions": "all"}) == ids(old)  # the unready one is never returned
    enrich([pending])
    assert found(api, {"versions": "current"}) == ids(pending)


def test_unready_records_are_never_returned(catalog, api):
    ready = one(catalog, "memo ready")
    ingest(catalog, [item("memo pending")])
    for query in ALL_MODES:
        assert found(api, {"collections": ["main"], "versions": "all", "status": "all"}, query) == ids(ready)


def test_tombstones_are_never_returned_and_retract_the_value(catalog, api):
    value = one(catalog, "memo: plan is A", key="plan")
    tombstone = one(catalog, None, key="plan", tombstone=True, derived_from=[str(value)])
    assert found(api) == []
    history = found(api, {"versions": "all", "status": "all"})
    assert history == ids(value)
    assert str(tombstone) not in history


# --- workspaces -------------------------------------------------------------------------------

@pytest.fixture
def other_workspace(db):
    other, _key = workspace_create(name="other-co")
    catalog_load(workspace=other, directory=EXAMPLE_CATALOG)
    other.refresh_from_db()
    return other


@pytest.mark.parametrize("query", ALL_MODES, ids=MODE_IDS)
def test_another_workspaces_records_are_never_returned(catalog, api, other_workspace, query):
    mine = one(catalog, "memo", entity="maria", content={"speaker": "ana"})
    one(other_workspace, "memo", entity="maria", content={"speaker": "ana"})
    assert found(api, {"collections": ["main"], "entities": ["maria"], "versions": "all", "status": "all"},
                 query) == ids(mine)


def test_a_keyed_value_in_another_workspace_never_hides_mine(catalog, api, other_workspace):
    mine = one(catalog, "memo", key="plan", entity="maria")
    one(other_workspace, "memo", key="plan", entity="maria")
    assert found(api) == ids(mine)


def test_the_query_vector_cache_is_per_workspace(catalog, api, other_workspace_api, embedded_texts):
    """A query vector cached for one workspace never answers another's search: a hit is faster
    than embedding, so sharing it would tell workspace B what A just searched for."""
    query = {"mode": "vector", "q": "what did the other tenant just search for"}
    found(api, query=query)
    found(other_workspace_api, query=query)
    assert embedded_texts == [query["q"]] * 2
    found(api, query=query)
    found(other_workspace_api, query=query)
    assert embedded_texts == [query["q"]] * 2
