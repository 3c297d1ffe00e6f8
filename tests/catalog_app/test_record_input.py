"""Item rules of ``POST /records`` that need a collection of their own (``record_input``): a
text projected from a list, declared field types checked before the JSON Schema, and a
tombstone in a collection that requires a client score."""
import shutil
import textwrap

import pytest

from catalog_app.models import Record
from catalog_app.services.catalog_load import catalog_load
from tests.conftest import EXAMPLE_CATALOG


# A mixed collection whose text is projected from a list and which requires a client score.
MEETINGS = {
    "collections/meetings.yaml": """
        collections:
          - name: meetings
            version: 1
            active: true
            mode: mixed
            schema:
              type: object
              required: [text]
              properties:
                text: {type: string}
                title: {type: string}
                attendees: {type: array, items: {type: string}}
                starts_at: {type: string, format: date-time}
            text_projection: "{{title}} with {{attendees}}"
            fields:
              attendees: {path: content.attendees, type: [string], filter: true}
              starts_at: {path: content.starts_at, type: datetime, filter: true}
            required_processors: [attendance]
            search_profile: pg_default
    """,
    "conf/processors/attendance.yaml": """
        processors:
          - name: attendance
            kind: score
            source: client
            input: {collections: [meetings]}
            scale: [0, 1]
    """,
}


@pytest.fixture
def meetings(workspace, tmp_path):
    directory = tmp_path / "catalog"
    shutil.copytree(EXAMPLE_CATALOG, directory)
    for relative, text in MEETINGS.items():
        (directory / relative).parent.mkdir(parents=True, exist_ok=True)
        (directory / relative).write_text(textwrap.dedent(text))
    catalog_load(workspace=workspace, directory=directory)
    return workspace


def post(api, *records):
    return api.post("/records", {"records": list(records)}, format="json")


def meeting(**overrides):
    return {"entity": "team", "collection": "meetings", "type": "meeting", "key": "weekly",
            "content": {"title": "Sync", "attendees": ["Maria", "Kai"]}, "scores": {"attendance": 0.8}, **overrides}


def test_text_projection_renders_values_as_compact_json(api, meetings):
    response = post(api, meeting())
    assert response.status_code == 200, response.json()
    record = Record.objects.get(pk=response.json()["inserted"][0]["id"])
    assert record.text == 'Sync with ["Maria","Kai"]'
    assert record.content["text"] == record.text


@pytest.mark.parametrize(("content", "path"), [
    ({"title": "Sync", "attendees": [42]}, "records[0].content.attendees[0]"),
    ({"title": "Sync", "attendees": ["Maria"], "starts_at": "tomorrow"}, "records[0].content.starts_at"),
], ids=["array item", "datetime"])
def test_a_declared_field_of_the_wrong_type_is_field_type(api, meetings, content, path):
    response = post(api, meeting(content=content))
    assert response.status_code == 422
    assert (response.json()["error"], response.json()["path"]) == ("field_type", path)
    assert response.json()["detail"].startswith(f"records[0]: {path.removeprefix('records[0].')}: ")


def test_a_tombstone_needs_no_required_client_output_and_is_ready_at_once(api, meetings):
    value = post(api, meeting()).json()["inserted"][0]["id"]
    response = post(api, {"entity": "team", "collection": "meetings", "type": "meeting", "key": "weekly",
                          "tombstone": True, "derived_from": [value]})
    assert response.status_code == 200, response.json()
    assert response.json()["inserted"][0]["ready"] is True
    record = Record.objects.get(pk=response.json()["inserted"][0]["id"])
    assert record.content == {"text": "", "tombstone": True} and record.enriched_at is not None
    assert record.scores == {} and record.annotations == {}


def test_a_new_collection_version_brings_its_own_schema_and_a_pinned_one_keeps_its_own(api, meetings, tmp_path):
    assert post(api, meeting()).status_code == 200
    directory = tmp_path / "catalog"
    v1 = textwrap.dedent(MEETINGS["collections/meetings.yaml"])
    v2 = v1.split("collections:\n", 1)[1].replace("version: 1", "version: 2").replace(
        "title: {type: string}", "title: {type: string, maxLength: 3}")
    (directory / "collections/meetings.yaml").write_text(v1.replace("active: true", "active: false") + v2)
    catalog_load(workspace=meetings, directory=directory)
    response = post(api, meeting())
    assert response.status_code == 422
    assert (response.json()["error"], response.json()["path"]) == ("content_schema", "records[0].content.title")
    assert post(api, meeting(collection_version=1)).status_code == 200
