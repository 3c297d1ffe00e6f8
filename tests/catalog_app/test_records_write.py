"""POST /records: every write-side rule of the reference, as a table of invalid batches, plus
the behaviours of valid ones. Every rejected batch must leave the record table unchanged."""
import uuid

import pytest
from django.db import connection

from catalog_app.models import Record

OK_EVENT = {"entity": "contact.maria", "type": "event", "text": "Maria confirmed the Q3 budget."}


def event(**overrides):
    return {**OK_EVENT, **overrides}


def ticket(**overrides):
    return {"entity": "contact.maria", "collection": "tickets", "type": "ticket", "text": "Printer broken",
            "content": {"channel": "email"}, **overrides}


def post(api, *records, body=None):
    return api.post("/records", body if body is not None else {"records": list(records)}, format="json")


INVALID_BATCHES = [
    # (name, body, status, code, path)
    ("body not an object", [1], 422, "request_schema", None),
    ("records missing", {}, 422, "request_schema", "records"),
    ("unknown top-level key", {"records": [OK_EVENT], "extra": 1}, 422, "request_schema", "extra"),
    ("records not a list", {"records": {}}, 422, "request_schema", "records"),
    ("empty batch", {"records": []}, 422, "request_schema", "records"),
    ("batch over MAX_BATCH", {"records": [OK_EVENT] * 101}, 422, "batch_too_large", "records"),
    ("item not an object", {"records": ["x"]}, 422, "request_schema", "records[0]"),
    ("unknown item key", {"records": [event(colour="red")]}, 422, "request_schema", "records[0].colour"),
    ("entity missing", {"records": [{"type": "event", "text": "x"}]}, 422, "request_schema", "records[0].entity"),
    ("type missing", {"records": [{"entity": "e", "text": "x"}]}, 422, "request_schema", "records[0].type"),
    ("entity star", {"records": [event(entity="*")]}, 422, "entity", "records[0].entity"),
    ("entity blank", {"records": [event(entity=" ")]}, 422, "entity", "records[0].entity"),
    ("entity too long", {"records": [event(entity="e" * 256)]}, 422, "entity", "records[0].entity"),
    ("entity not a string", {"records": [event(entity=5)]}, 422, "entity", "records[0].entity"),
    ("system collection", {"records": [event(collection="_system")]}, 422, "reserved_collection",
     "records[0].collection"),
    ("collection pattern", {"records": [event(collection="Main")]}, 422, "request_schema", "records[0].collection"),
    ("unknown collection", {"records": [event(collection="nope")]}, 422, "unknown_collection",
     "records[0].collection"),
    ("unknown collection version", {"records": [event(collection_version=9)]}, 422,
     "unknown_collection_version", "records[0].collection_version"),
    ("collection version not an integer", {"records": [event(collection_version="1")]}, 422, "request_schema",
     "records[0].collection_version"),
    ("reserved type run", {"records": [event(type="run")]}, 422, "reserved_type", "records[0].type"),
    ("reserved type erasure", {"records": [event(type="erasure")]}, 422, "reserved_type", "records[0].type"),
    ("type pattern", {"records": [event(type="Big Event")]}, 422, "request_schema", "records[0].type"),
    ("bad status", {"records": [event(status="live")]}, 422, "request_schema", "records[0].status"),
    ("key on an event collection", {"records": [ticket(key="k")]}, 422, "record_mode", "records[0].key"),
    ("no key on a keyed collection", {"records": [{"entity": "e", "collection": "profiles", "type": "fact",
                                                  "text": "x"}]}, 422, "record_mode", "records[0].key"),
    ("key too long", {"records": [event(key="k" * 129)]}, 422, "request_schema", "records[0].key"),
    ("key with outer whitespace", {"records": [event(key=" k")]}, 422, "request_schema", "records[0].key"),
    ("text missing without projection", {"records": [{"entity": "e", "type": "event"}]}, 422, "text_required",
     "records[0].text"),
    ("projection value missing", {"records": [{"entity": "e", "collection": "profiles", "type": "fact",
                                              "key": "role", "content": {"title": "Kickoff"}}]}, 422,
     "text_required", "records[0].content.starts_at"),
    ("text not a string", {"records": [event(text=7)]}, 422, "request_schema", "records[0].text"),
    ("content.text differs", {"records": [event(content={"text": "other"})]}, 422, "text_mismatch",
     "records[0].content.text"),
    ("content not an object", {"records": [event(content=[1])]}, 422, "request_schema", "records[0].content"),
    ("content.tombstone reserved", {"records": [event(content={"tombstone": True})]}, 422, "reserved_content",
     "records[0].content.tombstone"),
    ("schema: enum", {"records": [ticket(content={"channel": "fax"})]}, 422, "content_schema",
     "records[0].content.channel"),
    ("schema: required property", {"records": [ticket(content={})]}, 422, "content_schema", "records[0].content"),
    ("schema: date-time without timezone", {"records": [{"entity": "e", "collection": "profiles", "type": "fact",
                                                         "key": "k", "content": {"title": "T",
                                                                                 "starts_at": "2026-01-01T10:00"}}]},
     422, "content_schema", "records[0].content.starts_at"),
    ("declared date-time field without timezone",
     {"records": [ticket(content={"channel": "email", "opened_at": "2026-01-01T10:00:00"})]}, 422, "field_type",
     "records[0].content.opened_at"),
    ("declared integer field of the wrong type",
     {"records": [ticket(content={"channel": "email", "priority": "high"})]}, 422, "field_type",
     "records[0].content.priority"),
    ("occurred_at without timezone", {"records": [event(occurred_at="2026-01-01T10:00:00")]}, 422,
     "request_schema", "records[0].occurred_at"),
    ("occurred_at not a timestamp", {"records": [event(occurred_at="yesterday")]}, 422, "request_schema",
     "records[0].occurred_at"),
    ("dedupe_key too long", {"records": [event(dedupe_key="d" * 257)]}, 422, "request_schema",
     "records[0].dedupe_key"),
    ("derived_from not a list", {"records": [event(derived_from="x")]}, 422, "request_schema",
     "records[0].derived_from"),
    ("derived_from not uuids", {"records": [event(derived_from=["x"])]}, 422, "request_schema",
     "records[0].derived_from[0]"),
    ("duplicate parent", {"records": [event(derived_from=[str(uuid.UUID(int=1))] * 2)]}, 422, "duplicate_parent",
     "records[0].derived_from"),
    ("parent not found", {"records": [event(derived_from=[str(uuid.UUID(int=1))])]}, 422, "parent_not_found",
     "records[0].derived_from[0]"),
    ("tombstone not a boolean", {"records": [event(tombstone="yes")]}, 422, "request_schema",
     "records[0].tombstone"),
    ("tombstone without key", {"records": [{"entity": "e", "type": "fact", "tombstone": True,
                                            "derived_from": [str(uuid.UUID(int=1))]}]}, 422, "tombstone",
     "records[0].key"),
    ("tombstone without parent", {"records": [{"entity": "e", "type": "fact", "key": "k", "tombstone": True}]},
     422, "tombstone", "records[0].derived_from"),
    ("tombstone with text", {"records": [{"entity": "e", "type": "fact", "key": "k", "tombstone": True,
                                          "text": "gone", "derived_from": [str(uuid.UUID(int=1))]}]}, 422,
     "tombstone", "records[0].text"),
    ("tombstone with content", {"records": [{"entity": "e", "type": "fact", "key": "k", "tombstone": True,
                                             "content": {"a": 1}, "derived_from": [str(uuid.UUID(int=1))]}]},
     422, "tombstone", "records[0].content"),
    ("score for an unknown processor", {"records": [event(scores={"nope": 1})]}, 422, "client_output",
     "records[0].scores.nope"),
    ("score for a processor outside the collection", {"records": [event(scores={"confidence": 0.5})]}, 422,
     "client_output", "records[0].scores.confidence"),
    ("score not a number", {"records": [event(scores={"importance": "high"})]}, 422, "client_output",
     "records[0].scores.importance"),
    ("scores not an object", {"records": [event(scores=[1])]}, 422, "request_schema", "records[0].scores"),
    ("annotation for a non-client processor", {"records": [ticket(annotations={"sentiment": {"label": "positive"}},
                                                                  )]}, 422, "client_output",
     "records[0].annotations.sentiment"),
    ("annotation against its schema", {"records": [{"entity": "e", "collection": "outcomes", "type": "outcome",
                                                    "text": "won", "scores": {"confidence": 0.5},
                                                    "annotations": {"review": {"score": 1}}}]}, 422,
     "client_output", "records[0].annotations.review"),
    ("required client score missing", {"records": [{"entity": "e", "collection": "outcomes", "type": "outcome",
                                                    "text": "won"}]}, 422, "required_client_output",
     "records[0].scores.confidence"),
    ("error in a later item names it", {"records": [OK_EVENT, event(entity="*")]}, 422, "entity",
     "records[1].entity"),
    # Declared fields are checked before the JSON Schema (reference 3.3), so a value of the wrong
    # type is field_type at its path, while other schema violations stay content_schema.
    ("array field item of the wrong type", {"records": [event(content={"tags": ["ok", 42]})]}, 422, "field_type",
     "records[0].content.tags[1]"),
    ("array field not a list", {"records": [event(content={"tags": "urgent"})]}, 422, "field_type",
     "records[0].content.tags"),
    ("datetime field not a timestamp", {"records": [ticket(content={"channel": "email", "opened_at": "tomorrow"})]},
     422, "field_type", "records[0].content.opened_at"),
    ("declared field outside its schema bounds", {"records": [ticket(content={"channel": "email", "priority": 9})]},
     422, "content_schema", "records[0].content.priority"),
]


@pytest.mark.parametrize("name,body,status,code,path", INVALID_BATCHES, ids=[row[0] for row in INVALID_BATCHES])
def test_invalid_batch_is_rejected_with_code_and_path_and_writes_nothing(api, catalog, name, body, status, code,
                                                                          path):
    response = post(api, body=body)
    assert response.status_code == status, response.json()
    payload = response.json()
    assert payload["error"] == code
    assert payload.get("path") == path
    if path and path.startswith("records["):
        assert payload["detail"].startswith(path.split(".")[0] + ":")
    assert Record.objects.count() == 0


def test_invalid_json_is_its_own_code(api, catalog):
    response = api.post("/records", data="{not json", content_type="application/json")
    assert response.status_code == 422
    assert response.json()["error"] == "invalid_json"


@pytest.mark.parametrize("header", ["", "Bearer", "Basic abc", "Bearer a b", "Bearer wrong-key"])
def test_missing_or_bad_bearer_is_unauthorized(client, catalog, header):
    extra = {"HTTP_AUTHORIZATION": header} if header else {}
    response = client.post("/records", {"records": [OK_EVENT]}, content_type="application/json", **extra)
    assert response.status_code == 401
    assert response.json()["error"] == "unauthorized"
    assert Record.objects.count() == 0


def test_bearer_scheme_is_case_insensitive(api, catalog, workspace_and_key):
    api.credentials(HTTP_AUTHORIZATION=f"bEaReR {workspace_and_key[1]}")
    assert post(api, OK_EVENT).status_code == 200


def test_workspace_without_catalog_gets_no_catalog(api, db):
    response = post(api, OK_EVENT)
    assert response.status_code == 409
    assert response.json()["error"] == "no_catalog"


@pytest.mark.parametrize("setting,value,record,code,path", [
    ("MAX_TEXT_CHARS", 5, event(text="123456"), "text_too_large", "records[0].text"),
    ("MAX_CONTENT_BYTES", 40, event(text="a" * 50), "content_too_large", "records[0].content"),
    ("MAX_DERIVED_FROM", 1, event(derived_from=[str(uuid.UUID(int=1)), str(uuid.UUID(int=2))]),
     "too_many_parents", "records[0].derived_from"),
    ("MAX_ANNOTATION_BYTES", 10, {"entity": "e", "collection": "outcomes", "type": "outcome", "text": "won",
                                  "scores": {"confidence": 1}, "annotations": {"review": {"verdict": "x" * 20}}},
     "annotation_too_large", "records[0].annotations.review"),
])
def test_size_limits_are_settings(api, catalog, settings, setting, value, record, code, path):
    settings.MEMSEEK = {setting: value}
    response = post(api, record)
    assert response.status_code == 422
    assert (response.json()["error"], response.json()["path"]) == (code, path)
    assert Record.objects.count() == 0


def test_a_failing_item_rolls_back_the_whole_batch(api, catalog):
    parent = post(api, event(key=None)).json()["inserted"][0]["id"]
    before = Record.objects.count()
    # The first two items are valid and would insert; the third fails only in the database phase.
    response = post(api, event(text="one"), event(text="two", derived_from=[parent]),
                    event(text="three", derived_from=[str(uuid.uuid4())]))
    assert response.status_code == 422
    assert response.json()["path"] == "records[2].derived_from[0]"
    assert Record.objects.count() == before


def test_valid_batch_inserts_in_order_with_readiness(api, catalog):
    response = post(api, event(text="first"), ticket(), {"entity": "e", "collection": "outcomes", "type": "outcome",
                                                         "text": "won", "scores": {"confidence": 0.9}})
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["duplicates"] == []
    assert [row["index"] for row in body["inserted"]] == [0, 1, 2]
    records = [Record.objects.get(pk=row["id"]) for row in body["inserted"]]
    assert records[0].seq < records[1].seq < records[2].seq
    assert records[0].content == {"text": "first"} and records[0].text == "first"
    assert records[0].collection == "main" and records[0].collection_version == 1
    assert records[0].status == "active" and records[0].depth == 0 and records[0].key is None
    # An outcome needs only its client scorer, so it is ready at insert.
    assert body["inserted"][2]["ready"] is True
    assert records[2].enriched_at is not None


def test_client_scores_are_clamped_mirrored_and_audited(api, catalog):
    response = post(api, {"entity": "e", "collection": "outcomes", "type": "outcome", "text": "won",
                          "scores": {"confidence": 7}, "annotations": {"review": {"verdict": "good", "score": 0.25}}})
    record = Record.objects.get(pk=response.json()["inserted"][0]["id"])
    assert record.scores == {"confidence": 1, "review_score": 0.25}
    assert record.annotations["confidence"] == {"value": 1}
    assert record.annotations["review"] == {"verdict": "good", "score": 0.25}
    meta = record.annotation_meta["confidence"]
    assert meta["status"] == "ok" and meta["source"] == "client" and len(meta["output_hash"]) == 64
    assert "value" not in meta


def test_text_projection_builds_the_text(api, catalog):
    response = post(api, {"entity": "e", "collection": "profiles", "type": "fact", "key": "kickoff",
                          "content": {"title": "Kickoff", "starts_at": "2026-07-01T10:00:00Z"}})
    record = Record.objects.get(pk=response.json()["inserted"][0]["id"])
    assert record.text == "Kickoff starts 2026-07-01T10:00:00Z"
    assert record.content["text"] == record.text


def test_explicit_occurred_at_is_stored_and_defaults_to_now(api, catalog):
    ids = [row["id"] for row in post(api, event(occurred_at="2026-01-02T03:04:05+02:00"), event()).json()["inserted"]]
    explicit, default = (Record.objects.get(pk=i) for i in ids)
    assert explicit.occurred_at.isoformat() == "2026-01-02T01:04:05+00:00"
    assert default.occurred_at == default.created_at


def test_dedupe_identical_retry_is_a_duplicate_and_changed_payload_conflicts(api, catalog):
    first = post(api, event(dedupe_key="msg-1")).json()["inserted"][0]
    retry = post(api, event(dedupe_key="msg-1"), event(text="new"))
    assert retry.status_code == 200
    assert retry.json()["duplicates"] == [{"index": 0, "id": first["id"], "ready": first["ready"]}]
    assert [row["index"] for row in retry.json()["inserted"]] == [1]
    count = Record.objects.count()
    conflict = post(api, event(text="different", dedupe_key="msg-1"))
    assert conflict.status_code == 409
    assert (conflict.json()["error"], conflict.json()["path"]) == ("dedupe_conflict", "records[0].dedupe_key")
    assert Record.objects.count() == count


def test_explicit_occurred_at_takes_part_in_dedupe_but_the_server_default_does_not(api, catalog):
    post(api, event(dedupe_key="a"))
    assert post(api, event(dedupe_key="a")).json()["duplicates"]  # two server defaults: same payload
    post(api, event(dedupe_key="b", occurred_at="2026-01-01T00:00:00Z"))
    response = post(api, event(dedupe_key="b", occurred_at="2026-01-01T00:00:01Z"))
    assert response.status_code == 409


def test_dedupe_within_one_batch(api, catalog):
    response = post(api, event(dedupe_key="x"), event(dedupe_key="x"))
    body = response.json()
    assert len(body["inserted"]) == 1
    assert body["duplicates"] == [{"index": 1, "id": body["inserted"][0]["id"], "ready": body["inserted"][0]["ready"]}]
    assert post(api, event(dedupe_key="y"), event(dedupe_key="y", text="other")).status_code == 409


def test_tombstone_is_ready_stored_canonically_and_keeps_continuity_depth(api, catalog):
    value = post(api, event(key="role", text="Maria is CFO")).json()["inserted"][0]["id"]
    response = post(api, {"entity": "contact.maria", "type": "fact", "key": "role", "tombstone": True,
                          "derived_from": [value]})
    assert response.status_code == 200, response.json()
    row = response.json()["inserted"][0]
    assert row["ready"] is True
    record = Record.objects.get(pk=row["id"])
    assert record.content == {"text": "", "tombstone": True}
    assert record.tombstone is True and record.text == ""
    assert record.derived_from == [uuid.UUID(value)]
    assert record.depth == 0


def test_depth_grows_with_derivation_and_is_bounded(api, catalog):
    parent = post(api, event(text="evidence")).json()["inserted"][0]["id"]
    for expected in (1, 2, 3, 4):
        parent_row = post(api, event(text=f"derived {expected}", derived_from=[parent])).json()["inserted"][0]
        assert Record.objects.get(pk=parent_row["id"]).depth == expected
        parent = parent_row["id"]
    response = post(api, event(text="too deep", derived_from=[parent]))
    assert response.status_code == 422
    assert (response.json()["error"], response.json()["path"]) == ("depth_limit", "records[0].derived_from")


def test_depth_takes_the_deepest_parent(api, catalog):
    shallow = post(api, event(text="a")).json()["inserted"][0]["id"]
    deep = post(api, event(text="b", derived_from=[shallow])).json()["inserted"][0]["id"]
    child = post(api, event(text="c", derived_from=[shallow, deep])).json()["inserted"][0]["id"]
    assert Record.objects.get(pk=child).depth == 2


def test_a_parent_of_another_workspace_looks_missing(api, catalog, other_workspace_api):
    foreign = post(other_workspace_api, OK_EVENT).json()["inserted"][0]["id"]
    response = post(api, event(derived_from=[foreign]))
    assert response.status_code == 422
    assert response.json()["error"] == "parent_not_found"


def test_an_existing_cyclic_lineage_is_never_extended(api, catalog):
    a = post(api, event(text="a")).json()["inserted"][0]["id"]
    b = post(api, event(text="b", derived_from=[a])).json()["inserted"][0]["id"]
    with connection.cursor() as cursor:  # corrupt data: make a cite its own descendant
        cursor.execute("UPDATE catalog_app_record SET derived_from = ARRAY[%s]::uuid[] WHERE id = %s", [b, a])
    response = post(api, event(text="c", derived_from=[b]))
    assert response.status_code == 422
    assert response.json()["error"] == "parent_cycle"


def test_drafts_are_accepted_in_their_own_lane(api, catalog):
    response = post(api, event(key="role", text="CFO", status="draft"))
    record = Record.objects.get(pk=response.json()["inserted"][0]["id"])
    assert record.status == "draft"


def test_pinned_collection_version_is_written(api, catalog):
    response = post(api, event(collection_version=1))
    assert Record.objects.get(pk=response.json()["inserted"][0]["id"]).collection_version == 1


def test_parents_are_stored_sorted(api, catalog):
    parents = [post(api, event(text=f"parent {n}")).json()["inserted"][0]["id"] for n in range(4)]
    given = sorted(parents, reverse=True)
    child = post(api, event(text="child", derived_from=given)).json()["inserted"][0]["id"]
    assert Record.objects.get(pk=child).derived_from == sorted(uuid.UUID(parent) for parent in parents)
    assert api.get(f"/records/{child}").json()["derived_from"] == sorted(parents)

