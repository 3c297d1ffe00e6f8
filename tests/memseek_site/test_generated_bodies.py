"""Hypothesis-generated bodies, well-formed and hostile, for every POST route, sent to gunicorn on
loopback: no answer of 500 or more, every error the JSON envelope (the CI-size part of
``bench soak``, which sends 10,000 of the same bodies)."""
from __future__ import annotations

import json

import pytest
from django.db import connection

from bench.processes import Server, database_url
from bench.soak_bodies import POST_ROUTES
from bench.soak_client import Tally, send
from bench.soak_fuzz import fuzz_context, run_fuzz
from tests.conftest import FIXTURES
from tests.memseek_site.api_routes import keyed_api_operations

BODIES = 200


def test_the_generated_bodies_cover_every_post_route_of_the_urlconf():
    assert {route for method, route, _ in keyed_api_operations() if method == "POST"} == set(POST_ROUTES)


@pytest.fixture
def live(catalog, workspace_and_key):
    """gunicorn (one sync worker, enrichment in-request) on the test database, holding the
    quickstart sample records in ``catalog``'s workspace; yields (port, key)."""
    key = workspace_and_key[1]
    server = Server(workers=1, env={"DATABASE_URL": database_url(connection.settings_dict), "OMP_NUM_THREADS": "1",
                                    "TOUCH_ON_READ": "false", "CELERY_BROKER_URL": ""})
    try:
        samples = json.loads((FIXTURES / "samples" / "quickstart_records.json").read_text())
        answer = send(server.port, "POST", "/records", json.dumps(samples).encode(),
                      (("Content-Type", "application/json"),), key=key)
        assert answer.status == 200, answer.body[:300]
        yield server.port, key
    finally:
        server.stop()


@pytest.mark.model
@pytest.mark.django_db(transaction=True)
def test_generated_bodies_for_every_post_route_get_no_server_error(live):
    port, key = live
    tally = Tally()
    context = fuzz_context(port, key)
    # Route by route, so every route gets its share whatever Hypothesis's choices favour.
    share = BODIES // len(POST_ROUTES)
    sent = sum(run_fuzz(port, key, context, count=share, seed=20, tally=tally, clients=2, routes=(route,))
               for route in POST_ROUTES)
    assert sent == share * len(POST_ROUTES) == tally.total()
    assert tally.server_errors == []
    assert tally.no_answer == []
    assert tally.not_envelope == []
    assert {row["route"] for row in tally.route_rows()} == set(POST_ROUTES)
