"""POST /import and GET /export refusals: every bad line is a 4xx naming its line and the path in
it, and a refused import changes nothing (docs/export-import.md)."""
from __future__ import annotations

import json

import pytest
from django.db import connection

from catalog_app.catalog.hashing import definition_hash
from catalog_app.models import Definition, Record, RecordEmbedding, Workspace
from catalog_app.services.workspaces import workspace_create
from tests.catalog_app.factories import record_make
from tests.catalog_app.transfer_support import client_for, export_text, import_text
from tests.memseek_site.test_openapi_responses import check


@pytest.fixture
def exported(api, catalog) -> list[dict]:
    first = record_make(catalog, entity="maria", text="Maria confirmed the budget")
    record_make(catalog, entity="maria", text="The review moves to Friday", derived_from=[first.id], depth=1)
    record_make(catalog, entity="maria", collection="profiles", type="fact", key="city", text="Porto",
                content={"title": "Porto", "starts_at": "2026-09-01T09:00:00Z"})
    return [json.loads(line) for line in export_text(api).splitlines()]


@pytest.fixture
def target():
    workspace, key = workspace_create(name="target")
    return workspace, client_for(key)


def text_of(lines: list[dict]) -> str:
    return "".join(json.dumps(line) + "\n" for line in lines)


def first_record(lines: list[dict]) -> int:
    return next(index for index, line in enumerate(lines) if line["kind"] == "record")


def state(workspace) -> tuple:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM catalog_app_lexical_document WHERE workspace_id = %s", [workspace.pk])
        documents = cursor.fetchone()[0]
    return (Record.objects.filter(workspace=workspace).count(), Definition.objects.filter(workspace=workspace).count(),
            RecordEmbedding.objects.filter(workspace=workspace).count(),
            Workspace.objects.get(pk=workspace.pk).catalog_revision, documents)


def changed(lines: list[dict], index: int, **fields) -> list[dict]:
    copy = [dict(line) for line in lines]
    copy[index].update(fields)
    return copy


def without(lines: list[dict], index: int, key: str) -> list[dict]:
    copy = [dict(line) for line in lines]
    del copy[index][key]
    return copy


VECTOR = [0.1] * 8
GARBAGE = {"name": 7, "schema": [1, 2], "processors": "all"}


def _cases(lines: list[dict]) -> list[tuple[str, str, int, str, str]]:
    """(name, body, status, code, path) for each refusal; built from a real export."""
    r = first_record(lines)
    last = len(lines) - 1
    models = next(index for index, line in enumerate(lines) if line.get("family") == "processor")
    return [
        ("not json", text_of(lines[:r]) + "{nope\n" + text_of(lines[r + 1:]), 422, "invalid_json", None),
        ("empty line", text_of(lines[:2]) + "\n" + text_of(lines[2:]), 422, "import_format", "lines[2]"),
        ("no header", text_of(lines[1:]), 422, "import_format", "lines[0].kind"),
        ("two headers", text_of(lines[:1] + lines), 422, "import_format", "lines[1].kind"),
        ("cut short", text_of(lines[:-1]), 422, "import_incomplete", "lines"),
        ("after the end", text_of(lines + lines[r:r + 1]), 422, "import_format", f"lines[{last + 1}]"),
        ("unknown kind", text_of(changed(lines, r, kind="blob")), 422, "import_format", f"lines[{r}].kind"),
        ("unknown key", text_of(changed(lines, r, colour="red")), 422, "request_schema", f"lines[{r}].colour"),
        ("missing key", text_of(without(lines, r, "text")), 422, "request_schema", f"lines[{r}].text"),
        ("wrong format", text_of(changed(lines, 0, format="other/9")), 422, "import_format", "lines[0].format"),
        ("bad id", text_of(changed(lines, r, id="not-a-uuid")), 422, "request_schema", f"lines[{r}].id"),
        ("bad status", text_of(changed(lines, r, status="gone")), 422, "request_schema", f"lines[{r}].status"),
        ("bad time", text_of(changed(lines, r, occurred_at="yesterday")), 422, "request_schema",
         f"lines[{r}].occurred_at"),
        ("duplicate key in a line", text_of(lines[:r]) + '{"kind":"record","kind":"record"}\n' + text_of(lines[r + 1:]),
         422, "duplicate_key", f"lines[{r}].kind"),
        ("nul in text", text_of(changed(lines, r, text="a\u0000b")), 422, "invalid_character", f"lines[{r}].text"),
        ("seq out of order", text_of(changed(lines, r + 1, seq=1)), 422, "import_format", f"lines[{r + 1}].seq"),
        ("same id twice", text_of(changed(lines, r + 1, id=lines[r]["id"])), 422, "import_format",
         f"lines[{r + 1}].id"),
        ("unknown collection", text_of(changed(lines, r, collection="nowhere")), 422, "unknown_collection_version",
         f"lines[{r}].collection_version"),
        ("content off its schema", text_of(changed(lines, r, content={"speaker": "maria"})), 422, "content_schema",
         f"lines[{r}].content"),
        ("content field of another type", text_of(changed(lines, r, content={"text": lines[r]["text"], "speaker": 7})),
         422, "field_type", f"lines[{r}].content.speaker"),
        ("missing parent", text_of(changed(lines, r + 1, derived_from=["7b0c7c57-7f4c-4c84-9d43-11d1b7f4a9d1"])), 422,
         "parent_not_found", f"lines[{r + 1}].derived_from[0]"),
        ("short vector", text_of(changed(lines, r, vectors=[{"space": "s", "vector": [0.1, 0.2]}])), 422,
         "request_schema", f"lines[{r}].vectors[0].vector"),
        ("zero vector", text_of(changed(lines, r, vectors=[{"space": "s", "vector": [0.0] * 8}])), 422, "import_vector",
         f"lines[{r}].vectors[0].vector"),
        ("two vector sizes", text_of(changed(changed(lines, r, vectors=[{"space": "s", "vector": VECTOR}]), r + 1,
                                             vectors=[{"space": "s", "vector": VECTOR * 2}])), 422, "import_vector",
         f"lines[{r + 1}].vectors[0].vector"),
        ("altered definition", text_of(changed(lines, 1, body={"changed": True})), 422, "import_definition",
         "lines[1].hash"),
        ("unreadable definition", text_of(changed(lines, 1, body=GARBAGE, hash=definition_hash(GARBAGE))), 422,
         "import_definition", "lines[1].body"),
        ("unreadable processor", text_of(changed(lines, models, body=GARBAGE, hash=definition_hash(GARBAGE))), 422,
         "import_definition", f"lines[{models}].body"),
        ("unknown family", text_of(changed(lines, 1, family="spells")), 422, "import_definition", "lines[1].family"),
        ("huge number", text_of(lines[:r]) + json.dumps(lines[r]).replace('"depth": 0', '"depth": 1e999') + "\n"
         + text_of(lines[r + 1:]), 422, "number_out_of_range", f"lines[{r}].depth"),
    ]


def test_every_refusal_names_its_line_and_path_and_changes_nothing(exported, target):
    workspace, client = target
    before = state(workspace)
    for name, body, status, code, path in _cases(exported):
        response = client.post("/import?ids=remap", body.encode("utf-8"), content_type="application/x-ndjson")
        assert response.status_code == status, (name, response.content)
        payload = response.json()
        assert payload["error"] == code, (name, payload)
        if path is not None:
            assert payload["path"] == path, (name, payload)
        if path is not None and path.startswith("lines["):
            assert payload["line"] == int(path[6:path.index("]")]) + 1, (name, payload)
            assert payload["detail"].startswith(f"line {payload['line']}: "), (name, payload)
        assert state(workspace) == before, name


def test_a_record_that_conflicts_late_rolls_back_the_whole_import(api, catalog, exported, target):
    """The last record's dedupe key is taken by another record of the target: the definitions and
    records before it were written in the same transaction and are gone too."""
    workspace, client = target
    r = first_record(exported)
    import_text(client, text_of(exported[:r]) + text_of([exported[-1]]))  # definitions only, nothing to clash
    record_make(workspace, entity="maria", text="taken", dedupe_key="mine")
    before = state(workspace)
    body = text_of(changed(exported, len(exported) - 2, dedupe_key="mine"))
    payload = import_text(client, body, status=409, ids="remap", seqs="renumber")
    assert (payload["error"], payload["path"]) == ("dedupe_conflict", f"lines[{len(exported) - 2}].dedupe_key")
    assert state(workspace) == before


def test_a_record_stored_with_other_content_is_a_conflict(api, catalog, exported, target):
    workspace, client = target
    import_text(client, text_of(exported), ids="remap")
    before = state(workspace)
    r = first_record(exported)
    payload = import_text(client, text_of(changed(exported, r, text="edited")), status=409, ids="remap")
    assert (payload["error"], payload["path"], payload["line"]) == ("import_conflict", f"lines[{r}].id", r + 1)
    assert state(workspace) == before


def test_preserved_ids_held_by_another_workspace_are_refused(api, catalog, exported, target):
    workspace, client = target
    payload = import_text(client, text_of(exported), status=409)
    assert (payload["error"], payload["path"]) == ("import_id_taken", f"lines[{first_record(exported)}].id")
    assert Record.objects.filter(workspace=workspace).count() == 0


def test_preserved_seqs_already_numbered_are_refused_and_renumbering_takes_them(api, catalog, exported, target):
    workspace, client = target
    r = first_record(exported)
    import_text(client, text_of(exported[:r]) + text_of([exported[-1]]))
    record_make(workspace, entity="maria", text="written first")
    payload = import_text(client, text_of(exported), status=409, ids="remap")
    assert (payload["error"], payload["path"]) == ("import_seq_taken", f"lines[{r}].seq")
    assert import_text(client, text_of(exported), ids="remap", seqs="renumber")["records_added"] == 3
    assert sorted(Record.objects.filter(workspace=workspace).values_list("workspace_seq", flat=True)) == [1, 2, 3, 4]


def test_a_definition_active_in_another_version_is_a_conflict(api, catalog, exported, target):
    workspace, client = target
    r = first_record(exported)
    (index, line) = next((i, line) for i, line in enumerate(exported[:r]) if line.get("active"))
    Definition.objects.create(workspace=workspace, family=line["family"], name=line["name"], version=99, active=True,
                              body={}, hash="0" * 64)
    payload = import_text(client, text_of(exported), status=409, ids="remap")
    assert (payload["error"], payload["path"]) == ("import_conflict", f"lines[{index}].active")


@pytest.mark.parametrize(("query", "path"), [("ids=keep", "ids"), ("seqs=shuffle", "seqs"), ("colour=red", "colour")])
def test_bad_import_parameters_are_422(exported, target, query, path):
    _, client = target
    response = client.post(f"/import?{query}", text_of(exported).encode(), content_type="application/x-ndjson")
    assert response.status_code == 422 and response.json()["path"] == path


def test_an_import_sent_as_json_is_415(exported, target):
    _, client = target
    response = client.post("/import", {"lines": []}, format="json")
    assert response.status_code == 415 and response.json()["error"] == "unsupported_media_type"


def test_an_import_over_max_import_bytes_is_413(exported, target, settings):
    _, client = target
    settings.MEMSEEK = {**getattr(settings, "MEMSEEK", {}), "MAX_IMPORT_BYTES": 100}
    response = client.post("/import", text_of(exported).encode(), content_type="application/x-ndjson")
    assert response.status_code == 413 and response.json()["error"] == "body_too_large"


@pytest.mark.parametrize(("query", "path"), [({"cursor": "abc"}, "cursor"), ({"cursor": "x1.r.99999999999999999999"},
                                                                            "cursor"),
                                            ({"entity": ""}, "entity"), ({"colour": "red"}, "colour")])
def test_bad_export_parameters_are_422(api, catalog, query, path):
    response = api.get("/export", query)
    assert response.status_code == 422 and response.json()["path"] == path


def test_export_needs_read_and_import_needs_write(catalog, exported):
    _, write_only = workspace_create(name="writer", capabilities=["write"])
    _, read_only = workspace_create(name="reader", capabilities=["read"])
    assert client_for(write_only).get("/export").json()["error"] == "capability_missing"
    response = client_for(read_only).post("/import", text_of(exported).encode(), content_type="application/x-ndjson")
    assert (response.status_code, response.json()["error"]) == (403, "capability_missing")


def test_another_workspace_exports_none_of_these_records(catalog, exported, other_workspace_api):
    lines = [json.loads(line) for line in export_text(other_workspace_api).splitlines()]
    assert [line for line in lines if line["kind"] == "record"] == [] and lines[-1]["records"] == 0


def test_answers_and_refusals_match_the_openapi_document(api, catalog, exported, target):
    workspace, client = target
    body = text_of(exported).encode()
    check(client.post("/import?ids=remap", body, content_type="application/x-ndjson"), "POST", "/import")
    check(client.post("/import", body, content_type="application/x-ndjson"), "POST", "/import", 409)
    check(client.post("/import", b"{}\n", content_type="application/x-ndjson"), "POST", "/import", 422)
    check(api.get("/export", {"cursor": "x"}), "GET", "/export", 422)
    check(client_for(workspace_create(name="reader", capabilities=["write"])[1]).get("/export"), "GET", "/export", 403)


def test_other_workspace_settings_are_a_conflict_and_equal_ones_are_not(api, catalog, exported, target):
    workspace, client = target
    header = {**exported[0], "settings": {"retrieval.tokenBudget": 2000}}
    workspace.settings = {"retrieval.tokenBudget": 900}
    workspace.save(update_fields=["settings"])
    payload = import_text(client, text_of([header, *exported[1:]]), status=409, ids="remap")
    assert (payload["error"], payload["path"], payload["line"]) == ("import_conflict", "lines[0].settings", 1)
    assert Workspace.objects.get(pk=workspace.pk).settings == {"retrieval.tokenBudget": 900}
    workspace.settings = {"retrieval.tokenBudget": 2000}
    workspace.save(update_fields=["settings"])
    assert import_text(client, text_of([header, *exported[1:]]), ids="remap")["records_added"] == 3
