"""POST /memory/search over LoCoMo dev conversations (``/work/shared/bench/locomo``): the first
four sessions of conv-26 (8 May, 25 May, 9 June and 27 June 2023) as turns, embedded by the real
MiniLM. Dated questions asked with ``before`` see nothing after it; date words narrow the window."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from catalog_app.services.workspaces import workspace_create
from tests.retrieval_app.memory_brief_factories import load, locomo_samples, locomo_turns, session_dates, write
from tests.shared_rows import rows_shared_by_the_tests

SAMPLE = "conv-26"
SESSIONS = range(1, 5)
ENTITY = f"locomo.{SAMPLE}"


@pytest.fixture(scope="module")
def shared_turns(django_db_setup, django_db_blocker):
    """The workspace, its key and the embedded turns, written once for the module (embedding the
    sessions is the slow part, and every test here only reads them)."""
    with rows_shared_by_the_tests(django_db_blocker):
        workspace, key = workspace_create(name="acme")
        load(workspace)
        items = locomo_turns(SAMPLE, SESSIONS)
        ids = write(workspace, items)
        yield (workspace, key), {record_id: item for record_id, item in zip(ids, items)}


@pytest.fixture
def workspace_and_key(db, shared_turns):
    """The shared workspace; each test runs in a savepoint of its own."""
    return shared_turns[0]


@pytest.fixture
def turns(shared_turns):
    return shared_turns[1]


def search(api, body):
    response = api.post("/memory/search", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def sessions_of(body, turns):
    return {turns[hit["id"]]["content"]["session"] for hit in body["hits"]}


def questions_in_sessions():
    """The conversation's questions whose evidence lies in the ingested sessions, with the
    session holding the latest of it."""
    [sample] = [s for s in locomo_samples() if s["sample_id"] == SAMPLE]
    chosen = []
    for qa in sample["qa"]:
        sessions = {int(ev.split(":")[0][1:]) for ev in qa.get("evidence", []) if ev.startswith("D") and ":" in ev}
        if sessions and max(sessions) in SESSIONS and qa["category"] in (1, 2, 4):
            chosen.append((qa["question"], max(sessions), set(qa["evidence"])))
    return chosen


def test_dated_questions_asked_with_before_see_nothing_after_it(api, turns):
    dates = session_dates(SAMPLE)
    questions = questions_in_sessions()
    assert len(questions) >= 10
    found = 0
    for question, session, evidence in questions:
        day = dates[session].date()
        body = search(api, {"query": question, "entity": ENTITY, "before": day.isoformat()})
        end = datetime.combine(day + timedelta(days=1), datetime.min.time(), tzinfo=timezone.utc)
        assert body["hits"], question
        assert all(datetime.fromisoformat(hit["occurred_at"]) < end for hit in body["hits"]), question
        assert sessions_of(body, turns) <= set(range(1, session + 1))
        found += bool(evidence & {turns[hit["id"]]["content"]["dia_id"] for hit in body["hits"]})
    # The evidence is still there to be found as of its own day.
    assert found >= len(questions) // 2


def test_before_a_session_hides_that_session_and_the_later_ones(api, turns):
    body = search(api, {"query": "What did Caroline research about adoption agencies?", "entity": ENTITY,
                        "before": "2023-05-24"})
    assert sessions_of(body, turns) == {1}


# One ingest serves every case: embedding the sessions is the slow part of these tests.
NARROWED = [
    ("What did Caroline and Melanie talk about yesterday?", "2023-05-26", {2}),
    ("What did Melanie say last week?", "2023-06-01", {2}),
    ("What did Caroline talk about in May?", "2023-06-30", {1, 2}),
    ("What did Melanie share two weeks ago?", "2023-06-22", {3}),
]


def test_date_words_narrow_the_window_against_before(api, turns):
    for question, before, sessions in NARROWED:
        body = search(api, {"query": question, "entity": ENTITY, "before": before})
        assert sessions_of(body, turns) == sessions, question
        assert body["notes"][0].startswith("The question's "), question


def test_without_date_words_every_session_as_of_before_can_answer(api, turns):
    body = search(api, {"query": "What did Caroline and Melanie talk about?", "entity": ENTITY,
                        "before": "2023-06-30"})
    assert len(sessions_of(body, turns)) > 1 and "notes" not in body
