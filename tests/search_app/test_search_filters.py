"""Typed ``where`` filters and structured ordering over declared fields, and the catalog errors
a request can hit (views-and-search "Typed filters", "Ordering and ties"; reference A.1 steps
2, 5, 7 and 8). Uses ``fixtures/catalogs/search_fields`` (no required processors, so records
are ready at insert and no model is loaded)."""
import pytest

from tests.search_app.search_factories import ingest_ready, item, load_search_fields_catalog

NOTES = {"collections": ["notes"]}
QUERIES = {"structured": {"mode": "structured", "order_by": [{"field": "level"}]},
           "text": {"mode": "text", "q": "note"},
           "recent": {"mode": "recent"}}


def search(api, body: dict, status: int = 200) -> dict:
    response = api.post("/search", body, format="json")
    assert response.status_code == status, response.json()
    return response.json()


def names_of(body: dict, names: dict) -> list[str]:
    by_id = {str(record_id): name for name, record_id in names.items()}
    return [by_id[hit["id"]] for hit in body["hits"]]


@pytest.fixture
def notes(workspace):
    """Four ready notes (collection ``notes`` version 2). ``two`` is due at the same instant as
    ``one``, written with another offset; ``bare`` has no field values at all."""
    load_search_fields_catalog(workspace)
    rows = {
        "one": {"level": 1, "weight": 0.5, "due_at": "2026-07-01T10:00:00Z", "label": "alpha", "tags": ["vip", "red"],
                "done": True},
        "two": {"level": 2, "weight": 1.5, "due_at": "2026-07-01T12:00:00+02:00", "label": "beta", "tags": ["red"],
                "done": False},
        "three": {"level": 3, "weight": 2.5, "due_at": "2026-07-02T00:00:00Z", "label": "gamma", "tags": []},
        "bare": {},
    }
    ids = ingest_ready(workspace, [item(f"note {name}", collection="notes", content=content,
                                        annotations={"mood": {"label": "calm"}} if name == "one" else {})
                                   for name, content in rows.items()])
    return dict(zip(rows, ids))


FILTER_TABLE = [
    ({"level": {"eq": 2}}, {"two"}),
    ({"level": {"in": [1, 3]}}, {"one", "three"}),
    ({"level": {"gt": 1}}, {"two", "three"}),
    ({"level": {"gte": 2}}, {"two", "three"}),
    ({"level": {"lt": 2}}, {"one"}),
    ({"level": {"lte": 2}}, {"one", "two"}),
    ({"level": {"gt": 0, "lt": 3}}, {"one", "two"}),  # several conditions on one field: AND
    ({"weight": {"gt": 1.0}}, {"two", "three"}),
    ({"weight": {"eq": 1.5}}, {"two"}),
    ({"weight": {"lte": 1.5}}, {"one", "two"}),
    ({"weight": {"gte": 1}}, {"two", "three"}),  # an integer operand on a number field
    ({"label": {"eq": "beta"}}, {"two"}),
    ({"label": {"in": ["alpha", "gamma", "delta"]}}, {"one", "three"}),
    ({"done": {"eq": True}}, {"one"}),
    ({"done": {"eq": False}}, {"two"}),
    ({"tags": {"contains_any": ["vip", "blue"]}}, {"one"}),
    ({"tags": {"contains_any": ["red"]}}, {"one", "two"}),
    ({"tags": {"contains_all": ["red", "vip"]}}, {"one"}),
    ({"tags": {"contains_all": ["red"]}}, {"one", "two"}),
    ({"tags": {"eq": ["red"]}}, {"two"}),
    ({"tags": {"eq": ["red", "vip"]}}, set()),  # eq on a list is an exact ordered match
    ({"tags": {"eq": ["vip", "red"]}}, {"one"}),
    ({"tags": {"exists": True}}, {"one", "two", "three"}),  # an empty list is present
    ({"level": {"exists": True}}, {"one", "two", "three"}),
    ({"level": {"exists": False}}, {"bare"}),
    ({"label": {"exists": False}, "level": {"exists": False}}, {"bare"}),
    ({"level": {"gte": 2}, "tags": {"contains_any": ["red"]}}, {"two"}),  # several fields: AND
    ({"mood": {"exists": True}}, {"one"}),  # exists is exempt from the required-annotation rule
    ({"mood": {"exists": False}}, {"two", "three", "bare"}),
    # One instant, three notations: 10:00Z == 12:00+02:00 == 05:00-05:00.
    ({"due_at": {"eq": "2026-07-01T10:00:00Z"}}, {"one", "two"}),
    ({"due_at": {"eq": "2026-07-01T12:00:00+02:00"}}, {"one", "two"}),
    ({"due_at": {"in": ["2026-07-01T05:00:00-05:00"]}}, {"one", "two"}),
    ({"due_at": {"gt": "2026-07-01T10:00:00+00:00"}}, {"three"}),
    ({"due_at": {"gte": "2026-07-01T11:00:00+01:00"}}, {"one", "two", "three"}),
    ({"due_at": {"lt": "2026-07-02T02:00:00+02:00"}}, {"one", "two"}),
    ({"due_at": {"lte": "2026-07-02T02:00:00+02:00"}}, {"one", "two", "three"}),
    ({"due_at": {"gt": "2026-07-01T09:59:59.999999Z", "lt": "2026-07-01T10:00:00.000001Z"}}, {"one", "two"}),
]


@pytest.mark.parametrize("mode", list(QUERIES))
@pytest.mark.parametrize(("where", "expected"), FILTER_TABLE, ids=[str(row[0]) for row in FILTER_TABLE])
def test_typed_filter_keeps_exactly_the_matching_records(api, notes, mode, where, expected):
    body = search(api, {**QUERIES[mode], "scope": NOTES, "where": where})
    assert set(names_of(body, notes)) == expected
    assert [hit["rank"] for hit in body["hits"]] == list(range(1, len(expected) + 1))


@pytest.mark.parametrize("where", [
    {"level": {"eq": 1}}, {"level": {"in": [1, 2, 3]}}, {"level": {"gt": -1}}, {"level": {"lt": 100}},
    {"label": {"eq": "alpha"}}, {"tags": {"contains_any": ["red"]}}, {"tags": {"contains_all": ["red"]}},
    {"tags": {"eq": []}}, {"due_at": {"lte": "2100-01-01T00:00:00Z"}}, {"done": {"in": [True, False]}},
])
def test_a_missing_value_fails_every_condition_but_exists_false(api, notes, where):
    body = search(api, {**QUERIES["structured"], "scope": NOTES, "where": where})
    assert "bare" not in names_of(body, notes)


def test_filters_read_each_version_through_its_own_declaration(workspace, api):
    load_search_fields_catalog(workspace)
    old, new, _other = ingest_ready(workspace, [
        item("note", collection="notes", collection_version=1, content={"level": 2, "rating": 4}),
        item("note", collection="notes", collection_version=2, content={"level": 2, "rating": 4.5, "extra": "x"}),
        item("note", collection="notes", collection_version=2, content={"level": 5})])
    body = search(api, {**QUERIES["structured"], "scope": NOTES, "where": {"level": {"eq": 2}}})
    assert [hit["id"] for hit in body["hits"]] == [str(old), str(new)]
    pinned = {"collections": ["notes"], "collection_versions": {"notes": [2]}}
    body = search(api, {**QUERIES["structured"], "scope": pinned, "where": {"rating": {"gt": 4.2}}})
    assert [hit["id"] for hit in body["hits"]] == [str(new)]
    body = search(api, {**QUERIES["structured"], "scope": pinned, "where": {"extra": {"eq": "x"}}})
    assert [hit["id"] for hit in body["hits"]] == [str(new)]


# --- structured ordering ----------------------------------------------------------------------

@pytest.mark.parametrize(("order_by", "expected"), [
    ([{"field": "level"}], ["one", "two", "three", "bare"]),
    ([{"field": "level", "direction": "desc"}], ["three", "two", "one", "bare"]),  # missing stays last
    ([{"field": "weight", "direction": "desc"}], ["three", "two", "one", "bare"]),
    ([{"field": "label", "direction": "desc"}], ["three", "two", "one", "bare"]),
    ([{"field": "done"}], ["two", "one", "three", "bare"]),  # false < true; three and bare lack it
    # one and two are due at the same instant: ingestion order decides, in both directions.
    ([{"field": "due_at"}], ["one", "two", "three", "bare"]),
    ([{"field": "due_at", "direction": "desc"}], ["three", "one", "two", "bare"]),
    ([{"field": "due_at", "direction": "desc"}, {"field": "level", "direction": "desc"}],
     ["three", "two", "one", "bare"]),
])
def test_structured_order_follows_order_by_with_missing_values_last(api, notes, order_by, expected):
    body = search(api, {"mode": "structured", "scope": NOTES, "order_by": order_by})
    assert names_of(body, notes) == expected
    assert body["ranking"] == {"kind": "structured", "scored": False}


def test_structured_ties_keep_ingestion_order_in_both_directions(workspace, api):
    load_search_fields_catalog(workspace)
    first, second, third, low = ingest_ready(workspace, [
        item("note", collection="notes", content={"level": 7}), item("note", collection="notes", content={"level": 7}),
        item("note", collection="notes", content={"level": 7}), item("note", collection="notes", content={"level": 1})])
    for direction, expected in (("asc", [low, first, second, third]), ("desc", [first, second, third, low])):
        order_by = [{"field": "level", "direction": direction}]
        body = search(api, {"mode": "structured", "scope": NOTES, "order_by": order_by})
        assert [hit["id"] for hit in body["hits"]] == [str(record_id) for record_id in expected]


def test_structured_sorts_integers_numerically_and_instants_by_time(workspace, api):
    load_search_fields_catalog(workspace)
    ids = ingest_ready(workspace, [item("note", collection="notes", content=content) for content in (
        {"level": 10, "due_at": "2026-07-01T09:00:00-03:00"},  # 12:00Z
        {"level": 9, "due_at": "2026-07-01T13:00:00+02:00"},  # 11:00Z
        {"level": 100, "due_at": "2026-07-01T11:30:00Z"})])
    by_level = search(api, {"mode": "structured", "scope": NOTES, "order_by": [{"field": "level"}]})
    assert [hit["id"] for hit in by_level["hits"]] == [str(ids[1]), str(ids[0]), str(ids[2])]
    by_time = search(api, {"mode": "structured", "scope": NOTES, "order_by": [{"field": "due_at"}]})
    assert [hit["id"] for hit in by_time["hits"]] == [str(ids[1]), str(ids[2]), str(ids[0])]


def test_structured_k_cuts_the_sorted_list(api, notes):
    body = search(api, {"mode": "structured", "scope": NOTES, "order_by": [{"field": "level", "direction": "desc"}],
                        "k": 2})
    assert names_of(body, notes) == ["three", "two"]


# --- errors -------------------------------------------------------------------------------------

ERROR_TABLE = [
    ({"where": {"nope": {"eq": 1}}}, "field_reference", "where.nope"),
    ({"where": {"label": {"gt": "a"}}}, "field_operator", "where.label.gt"),
    ({"where": {"done": {"lte": True}}}, "field_operator", "where.done.lte"),
    ({"where": {"tags": {"gt": 1}}}, "field_operator", "where.tags.gt"),
    ({"where": {"level": {"contains_any": [1]}}}, "field_operator", "where.level.contains_any"),
    ({"where": {"tags": {"in": ["red"]}}}, "field_operator", "where.tags.in"),
    ({"where": {"level": {"eq": "three"}}}, "field_operand", "where.level.eq"),
    ({"where": {"level": {"eq": 2.5}}}, "field_operand", "where.level.eq"),
    ({"where": {"level": {"in": [1, "x"]}}}, "field_operand", "where.level.in[1]"),
    ({"where": {"weight": {"gt": True}}}, "field_operand", "where.weight.gt"),
    ({"where": {"label": {"eq": 3}}}, "field_operand", "where.label.eq"),
    ({"where": {"done": {"eq": 1}}}, "field_operand", "where.done.eq"),
    ({"where": {"due_at": {"gte": "yesterday"}}}, "field_operand", "where.due_at.gte"),
    ({"where": {"due_at": {"gte": "2026-07-01T10:00:00"}}}, "field_operand", "where.due_at.gte"),  # no timezone
    ({"where": {"tags": {"eq": "red"}}}, "field_operand", "where.tags.eq"),
    ({"where": {"tags": {"contains_all": [1]}}}, "field_operand", "where.tags.contains_all[0]"),
    ({"where": {"secret": {"eq": "x"}}}, "field_permission", "where.secret"),
    ({"where": {"mood": {"eq": "calm"}}}, "required_annotation", "where.mood"),
    ({"where": {"rating": {"gt": 1}}}, "field_compatibility", "where.rating"),  # integer in v1, number in v2
    ({"where": {"extra": {"eq": "x"}}}, "field_reference", "where.extra"),  # declared only in v2
    ({"mode": "structured", "order_by": [{"field": "secret"}]}, "field_permission", "order_by[0].field"),
    ({"mode": "structured", "order_by": [{"field": "tags"}]}, "field_permission", "order_by[0].field"),
    ({"mode": "structured", "order_by": [{"field": "nope"}]}, "field_reference", "order_by[0].field"),
    ({"mode": "text", "q": "note", "order_by": [{"field": "level"}]}, "field_order", "order_by"),
    ({"mode": "recent", "order_by": [{"field": "level"}]}, "field_order", "order_by"),
    ({"fields": ["secret"]}, "field_permission", "fields[0]"),
    ({"fields": ["level", "nope"]}, "field_reference", "fields[1]"),
    ({"annotations": ["mood"]}, "required_annotation", "annotations[0]"),
    ({"annotations": ["nope"]}, "unknown_annotation", "annotations[0]"),
    ({"scope": {"collections": ["nope"]}}, "unknown_collection", "scope.collections[0]"),
    ({"scope": {"collections": ["notes", "nope"]}}, "unknown_collection", "scope.collections[1]"),
    ({"rank": ["score", "nope"]}, "request_schema", "rank[1]"),
    ({"where": {"level": {"between": [1, 2]}}}, "request_schema", "where.level.between"),
    ({"where": {"level": {"in": []}}}, "request_schema", "where.level.in"),
    ({"mode": "structured"}, "request_schema", "order_by"),
]


@pytest.mark.parametrize(("change", "code", "path"), ERROR_TABLE, ids=[f"{row[1]}:{row[2]}" for row in ERROR_TABLE])
def test_invalid_field_use_is_rejected_with_a_code_and_path(workspace, api, change, code, path):
    load_search_fields_catalog(workspace)
    body = {"mode": "recent", "scope": NOTES, **change}
    response = api.post("/search", body, format="json")
    assert response.status_code == 422, response.json()
    assert response.json()["error"] == code
    assert response.json()["path"] == path
    assert response.json()["detail"]
