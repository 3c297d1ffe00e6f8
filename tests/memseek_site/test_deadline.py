"""Request deadlines (memseek_site.deadline): route classes, the statement timeout every statement
of a request runs under, the Python checks, and, against a live gunicorn, a request whose
statement is slowed past its deadline answering 503 from a worker that then serves the next one."""
from __future__ import annotations

import json
import time

import pytest
from django.db import OperationalError, connection, transaction

from bench.processes import Server, database_url
from catalog_app.management.commands.quickstart import gunicorn_argv
from catalog_app.services.workspaces import workspace_create
from memseek_site import deadline
from memseek_site.errors import ApiError
from tests.retrieval_app.factories import event, load, write
from tests.conftest import flush_committed_rows


@pytest.mark.parametrize("url_name, method, expected", [
    ("search", "POST", "search"), ("retrieve", "POST", "search"), ("memory-search", "POST", "search"),
    ("mcp", "POST", "search"), ("search-lexical", "POST", "search"), ("records", "POST", "bulk"),
    ("evaluate", "POST", "bulk"), ("memory-grep", "GET", "read"), ("records", "GET", "read"),
    ("collections", "GET", "read")])
def test_every_route_has_a_class(url_name, method, expected):
    assert deadline.route_class(url_name, method) == expected


def test_every_post_route_is_a_search_or_a_bulk_route():
    from django.urls import URLPattern, URLResolver, get_resolver
    from rest_framework.views import APIView

    def walk(patterns):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns)
            elif isinstance(pattern, URLPattern):
                yield pattern

    posted = {pattern.name for pattern in walk(get_resolver().url_patterns)
              if isinstance(getattr(pattern.callback, "cls", None), type)
              and issubclass(pattern.callback.cls, APIView) and hasattr(pattern.callback.cls, "post")}
    assert posted and posted <= deadline.SEARCH_ROUTES | deadline.BULK_ROUTES, posted - (
        deadline.SEARCH_ROUTES | deadline.BULK_ROUTES)


def test_set_transaction_stays_its_transactions_first_statement(transactional_db):
    deadline.attach()
    with deadline.deadline_scope(2.0), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        cursor.execute("SELECT current_setting('transaction_isolation'), current_setting('statement_timeout')")
        isolation, timeout = cursor.fetchone()
    assert isolation == "repeatable read" and timeout != "0"


def test_gunicorn_waits_longer_than_the_longest_deadline(settings):
    settings.MEMSEEK = {"REQUEST_DEADLINE_BULK_MS": 90_500}
    assert deadline.gunicorn_timeout_s() > 90.5
    argv = gunicorn_argv("127.0.0.1:8123", 1)
    assert int(argv[argv.index("--timeout") + 1]) > 90.5


def test_an_inner_deadline_never_outlives_the_enclosing_one():
    assert deadline.remaining_s() is None
    with deadline.deadline_scope(5):
        with deadline.deadline_scope(60):
            assert deadline.remaining_s() <= 5
        with deadline.deadline_scope(0.5):
            assert deadline.remaining_s() <= 0.5
    assert deadline.remaining_s() is None


def test_check_raises_deadline_exceeded_past_the_end():
    deadline.check("anything")  # no deadline: nothing to exceed
    with deadline.deadline_scope(-1):
        with pytest.raises(ApiError) as raised:
            deadline.check("ranking")
    assert raised.value.code == "deadline_exceeded" and raised.value.status == 503
    assert raised.value.envelope()["stage"] == "ranking"


def test_a_statement_runs_under_a_timeout_of_what_is_left(db):
    deadline.attach()
    with deadline.deadline_scope(2.0):
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('statement_timeout')")
            (setting,) = cursor.fetchone()
    assert setting.endswith("ms") and 0 < int(setting[:-2]) <= 2000


def test_a_statement_past_the_deadline_is_cancelled_by_postgresql(db):
    deadline.attach()
    with deadline.deadline_scope(0.3), pytest.raises(OperationalError) as raised, transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_sleep(30)")
    assert deadline.is_statement_timeout(raised.value)


def test_an_autocommit_statement_gets_a_transaction_of_its_own(transactional_db):
    deadline.attach()
    assert connection.get_autocommit() and not connection.in_atomic_block
    with deadline.deadline_scope(3.0):
        with connection.cursor() as cursor:
            # now() is when the transaction began: before this statement, with the set_config
            cursor.execute("SELECT current_setting('statement_timeout'), now() < statement_timestamp()")
            setting, began_before = cursor.fetchone()
    assert setting != "0" and began_before
    with connection.cursor() as cursor:  # set_config(..., true) ended with that transaction
        cursor.execute("SELECT current_setting('statement_timeout')")
        assert cursor.fetchone()[0] == "0"


def test_a_request_out_of_time_answers_deadline_exceeded_in_the_envelope(api, settings):
    settings.MEMSEEK = {"REQUEST_DEADLINE_MS": 1}
    response = api.get("/memory/grep", {"q": "anything"})
    assert response.status_code == 503, response.content
    assert response.json()["error"] == "deadline_exceeded" and response["Retry-After"] == "1"
    assert response.json()["stage"] == "database"


# --- Against a live gunicorn --------------------------------------------------------------------

DEADLINE_MS = 1500
# What the 503 may take beyond the deadline: the cancel reaching PostgreSQL, the envelope's
# rendering and the HTTP round trip on a machine shared with other test runs.
MARGIN_S = 3.0
SLEEP_S = 30  # far past the deadline: an answer before it proves the cancellation


@pytest.fixture(scope="module")
def slow_server(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        workspace, key = workspace_create(name="deadline-co")
        load(workspace)
        write(workspace, [event("Maria booked the tram tour in Lisbon"), event("Bob renewed his passport")])
    server = Server(workers=1, wsgi_module="tests.memseek_site.slow_statements_wsgi",
                    env={"DATABASE_URL": database_url(connection.settings_dict), "CELERY_BROKER_URL": "",
                         "OMP_NUM_THREADS": "1", "REQUEST_DEADLINE_SEARCH_MS": str(DEADLINE_MS),
                         "SLOW_STATEMENT_MARKER": "ts_rank_cd", "SLOW_STATEMENT_SLEEP_S": str(SLEEP_S)})
    yield server, key
    server.stop()
    with django_db_blocker.unblock():
        flush_committed_rows()


@pytest.mark.django_db
def test_a_slowed_statement_answers_503_within_the_deadline_and_the_worker_serves_on(slow_server):
    server, key = slow_server
    workers = server.worker_pids()
    started = time.monotonic()
    status, body = server.request("POST", "/retrieve", json.dumps({"query": "tram tour"}).encode(), key=key)
    elapsed = time.monotonic() - started
    assert status == 503, body
    assert json.loads(body)["error"] == "deadline_exceeded"
    assert elapsed < DEADLINE_MS / 1000 + MARGIN_S
    status, body = server.request("POST", "/search", json.dumps({"mode": "recent"}).encode(), key=key)
    assert status == 200, body  # a search-class request whose statements are not slowed
    assert len(json.loads(body)["hits"]) == 2
    status, body = server.request("GET", "/collections", key=key)
    assert status == 200 and json.loads(body)
    assert server.worker_pids() == workers  # the same worker: none was killed or replaced


def test_a_write_that_committed_as_its_deadline_ran_out_is_still_acknowledged(db):
    """The consistency token is read after the view's work committed: past the deadline it is still
    read, where a statement run under the deadline would answer deadline_exceeded for a stored write."""
    from django.http import HttpResponse

    from memseek_site.consistency import TOKEN_HEADER, ReadRoutingMiddleware
    from memseek_site.replicas import lsn_parse

    deadline.attach()
    response = HttpResponse(status=201)
    with deadline.deadline_scope(-1):
        with pytest.raises(ApiError), connection.cursor() as cursor:
            cursor.execute("SELECT 1")  # the statement wrapper refuses work past the deadline
        ReadRoutingMiddleware._acknowledge(response, workspace_id=None)
        assert deadline.remaining_s() < 0  # the deadline is back after the acknowledgement
    assert lsn_parse(response[TOKEN_HEADER]) > 0
