"""The lookups on a real conversation: LoCoMo ``conv-26`` (``/work/shared/bench/locomo``), its
first sessions written through ``record_ingest_batch`` without embeddings (the test catalog's
collections have no processors, so every turn is ready at write).

* ``around`` returns the neighbouring turns of one turn, in the data's order, inside its
  session (the collection's ``thread_field``), with each turn's speaker as its role;
* ``history`` returns one speaker's per-session observations (a keyed fact rewritten each
  session) oldest first, each dated by its session;
* ``grep`` finds exactly the turns whose text holds a phrase, by the in-test oracle over the
  raw data.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlencode

import pytest

from bench.locomo import parse_session_date
from catalog_app.services.catalog_load import catalog_load
from catalog_app.services.record_ingest import record_ingest_batch

DATA = Path("/work/shared/bench/locomo/locomo-dev.json")
SESSIONS = 4
ENTITY = "locomo.conv-26"
CATALOG = """collections:
  - name: turns
    version: 1
    active: true
    mode: event
    schema:
      type: object
      required: [text, dia_id, speaker, session]
      properties:
        text: {type: string}
        dia_id: {type: string}
        speaker: {type: string}
        session: {type: integer}
    fields:
      speaker: {path: content.speaker, type: string, filter: true, project: true}
      session: {path: content.session, type: integer, filter: true, project: true}
    role_field: speaker
    thread_field: session
    search_profile: pg_default
  - name: observations
    version: 1
    active: true
    mode: keyed
    schema:
      type: object
      required: [text, speaker]
      properties:
        text: {type: string}
        speaker: {type: string}
    fields:
      speaker: {path: content.speaker, type: string, filter: true, project: true}
    role_field: speaker
    search_profile: pg_default
"""

pytestmark = pytest.mark.skipif(not DATA.exists(), reason=f"the LoCoMo dev split is not at {DATA}")


@pytest.fixture
def conversation(tmp_path, workspace):
    (tmp_path / "collections").mkdir()
    (tmp_path / "collections" / "locomo.yaml").write_text(CATALOG)
    catalog_load(workspace=workspace, directory=tmp_path)
    workspace.refresh_from_db()
    sample = json.loads(DATA.read_text(encoding="utf-8"))[0]
    assert sample["sample_id"] == "conv-26"
    talk = sample["conversation"]
    turns, observations = [], []
    for number in range(1, SESSIONS + 1):
        occurred = parse_session_date(talk[f"session_{number}_date_time"]).isoformat()
        for turn in talk[f"session_{number}"]:
            turns.append({"entity": ENTITY, "collection": "turns", "type": "turn", "text": turn["text"],
                          "occurred_at": occurred,
                          "content": {"dia_id": turn["dia_id"], "speaker": turn["speaker"], "session": number}})
        [first, *_] = sample["observation"][f"session_{number}_observation"]["Caroline"]
        observations.append({"entity": ENTITY, "collection": "observations", "type": "observation",
                             "key": "caroline.latest", "text": first[0], "occurred_at": occurred,
                             "content": {"speaker": "Caroline"}})
    ids = {}
    for start in range(0, len(turns), 100):
        batch = turns[start:start + 100]
        result = record_ingest_batch(workspace=workspace, items=batch)
        ids.update({item["content"]["dia_id"]: str(row.id) for item, row in zip(batch, result.inserted)})
    for item in observations:  # one per batch, so each is a later version than the last
        record_ingest_batch(workspace=workspace, items=[item])
    return {"turns": turns, "ids": ids, "observations": observations}


def get(api, route: str, **params) -> dict:
    response = api.get(f"/memory/{route}?{urlencode(params)}")
    assert response.status_code == 200, response.json()
    return response.json()


def test_around_returns_the_neighbouring_turns_in_order(api, conversation):
    ids = conversation["ids"]
    body = get(api, "around", path=f"passages/turns/{ENTITY}/{ids['D2:5']}", before=2, after=2)
    assert [hit["id"] for hit in body["before"]] == [ids["D2:3"], ids["D2:4"]]
    assert [hit["id"] for hit in body["after"]] == [ids["D2:6"], ids["D2:7"]]
    assert [hit["roles"] for hit in body["before"] + [body["passage"]]] == [["Melanie"], ["Caroline"], ["Melanie"]]


def test_around_stays_inside_the_session(api, conversation):
    ids = conversation["ids"]
    session_2 = [turn["content"]["dia_id"] for turn in conversation["turns"] if turn["content"]["session"] == 2]
    body = get(api, "around", path=f"passages/turns/{ENTITY}/{ids[session_2[0]]}", before=5, after=3)
    assert body["before"] == []  # session 1's last turns are another thread
    assert [hit["id"] for hit in body["after"]] == [ids[dia] for dia in session_2[1:4]]
    last = get(api, "around", path=f"passages/turns/{ENTITY}/{ids[session_2[-1]]}", before=1, after=5)
    assert last["after"] == [] and [hit["id"] for hit in last["before"]] == [ids[session_2[-2]]]


def test_history_returns_a_facts_versions_in_order(api, conversation):
    body = get(api, "history", path=f"facts/observations/{ENTITY}/caroline.latest")
    observations = conversation["observations"]
    assert [version["text"] for version in body["versions"]] == [item["text"] for item in observations]
    assert [version["said_on"] for version in body["versions"]] == [item["occurred_at"][:10] for item in observations]
    assert [version["status"] for version in body["versions"]] == ["superseded"] * (SESSIONS - 1) + ["current"]
    assert [v["superseded_by"] for v in body["versions"][:-1]] == [v["id"] for v in body["versions"][1:]]
    assert get(api, "read", path=f"facts/observations/{ENTITY}/caroline.latest")["text"] == observations[-1]["text"]


@pytest.mark.parametrize("phrase", ["LGBTQ support group", "self-care", "Mel!", "me-time"])
def test_grep_finds_exactly_the_turns_holding_a_phrase(api, conversation, phrase):
    needle = phrase.lower()
    pattern = re.compile(r"(?<![^\W_])" + re.escape(needle) + (r"(?![^\W_])" if needle[-1].isalnum() else ""))
    expected = {conversation["ids"][turn["content"]["dia_id"]] for turn in conversation["turns"]
                if pattern.search(turn["text"].lower())}
    assert expected
    found, cursor = [], None
    while True:
        page = {"cursor": cursor} if cursor else {}
        body = get(api, "grep", q=phrase, path=f"passages/turns/{ENTITY}", limit=7, **page)
        found += [hit["id"] for hit in body["hits"]]
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert set(found) == expected and len(found) == len(expected)


def test_latest_between_two_session_days(api, conversation):
    turns = conversation["turns"]
    day = turns[-1]["occurred_at"][:10]
    body = get(api, "latest", path=f"passages/turns/{ENTITY}", after=day, before=day, limit=100)
    last_session = [conversation["ids"][t["content"]["dia_id"]] for t in turns if t["content"]["session"] == SESSIONS]
    assert [hit["id"] for hit in body["hits"]] == last_session[::-1]
