"""Retrieval slots are real PostgreSQL advisory locks: another connection (as another gunicorn
process would) holding every slot makes ``POST /search/lexical`` answer ``503 retrieval_busy``
with ``Retry-After``; a free slot lets it run."""
import pytest
from django.db import connections

from retrieval_app.lexical.slots import SLOT_LOCK_CLASS

from .lexical_factories import body, lexical, load_lexical_catalog, note, write


@pytest.fixture
def ws(workspace, tmp_path):
    load_lexical_catalog(workspace, tmp_path)
    write(workspace, [note("alpha beta")])
    return workspace


@pytest.fixture
def other_process():
    """A second database session, as another process's connection."""
    wrapper = connections.create_connection("default")
    wrapper.ensure_connection()
    yield wrapper
    wrapper.close()


def _hold(wrapper, slots) -> None:
    with wrapper.cursor() as cursor:
        for slot in slots:
            cursor.execute("SELECT pg_advisory_lock(%s, %s)", [SLOT_LOCK_CLASS, slot])


def _release(wrapper, slots) -> None:
    with wrapper.cursor() as cursor:
        for slot in slots:
            cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [SLOT_LOCK_CLASS, slot])


def test_every_slot_held_elsewhere_is_503_with_retry_after(api, ws, other_process, settings):
    settings.MEMSEEK = {"LEXICAL_RETRIEVAL_SLOTS": 2}
    _hold(other_process, [0, 1])
    response = api.post("/search/lexical", body("alpha"), format="json")
    assert response.status_code == 503
    assert response.json()["error"] == "retrieval_busy"
    assert int(response["Retry-After"]) >= 1
    _release(other_process, [1])
    assert lexical(api, body("alpha"))["page"]["matched_records"] == 1


def test_one_free_slot_is_enough_and_more_slots_admit_more(api, ws, other_process, settings):
    settings.MEMSEEK = {"LEXICAL_RETRIEVAL_SLOTS": 3}
    _hold(other_process, [0, 1])
    assert lexical(api, body("alpha"))["page"]["matched_records"] == 1
    settings.MEMSEEK = {"LEXICAL_RETRIEVAL_SLOTS": 2}
    assert api.post("/search/lexical", body("alpha"), format="json").status_code == 503


def test_a_request_problem_is_reported_before_a_slot_is_sought(api, ws, other_process, settings):
    settings.MEMSEEK = {"LEXICAL_RETRIEVAL_SLOTS": 1}
    _hold(other_process, [0])
    assert lexical(api, body("..."), status=400)["error"] == "lexical_query_terms"


@pytest.mark.django_db(transaction=True)
def test_outside_a_test_transaction_the_slot_is_released_when_the_request_ends(api, ws, other_process, settings):
    # No outer transaction here: the route opens its own REPEATABLE READ READ ONLY transaction,
    # and its slot's lock ends with it.
    settings.MEMSEEK = {"LEXICAL_RETRIEVAL_SLOTS": 1}
    for _ in range(2):
        assert lexical(api, body("alpha"))["page"]["matched_records"] == 1
    with other_process.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, 0)", [SLOT_LOCK_CLASS])
        assert cursor.fetchone()[0] is True
    assert api.post("/search/lexical", body("alpha"), format="json").status_code == 503
