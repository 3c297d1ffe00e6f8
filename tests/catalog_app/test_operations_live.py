"""The Operations page's request counts from a live gunicorn with three workers, each writing
after every request (``OPERATIONS_FLUSH_S=0``) while the others write the same rows: the table
holds exactly the requests sent, whichever worker answered each (docs/console.md#operations)."""
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection
from django.utils import timezone

from bench.processes import Server, database_url
from catalog_app.operations.selectors import route_hours
from tests.conftest import flush_committed_rows

pytestmark = [pytest.mark.django_db]

HEALTH, MISSES = 60, 9


@pytest.fixture(scope="module")
def live(django_db_setup, django_db_blocker):
    server = Server(workers=3, env={"DATABASE_URL": database_url(connection.settings_dict), "CELERY_BROKER_URL": "",
                                    "OMP_NUM_THREADS": "1", "OPERATIONS_FLUSH_S": "0"})
    yield server
    server.stop()
    with django_db_blocker.unblock():
        flush_committed_rows()


def counts() -> dict[str, tuple[int, int]]:
    return {row.label: (row.requests, row.client_errors) for row in route_hours(now=timezone.now())}


def test_concurrent_workers_add_up_exactly(live):
    before = counts()  # the start-up's own health checks

    def send(i):
        return live.request("GET", "/health" if i < HEALTH else f"/no/such/page/{i}")[0]

    with ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(send, range(HEALTH + MISSES)))
    assert statuses == [200] * HEALTH + [404] * MISSES
    after = counts()
    health_before = before.get("GET /health", (0, 0))
    assert after["GET /health"] == (health_before[0] + HEALTH, 0)
    assert after["GET unmatched"][0] - before.get("GET unmatched", (0, 0))[0] == MISSES
    assert after["GET unmatched"][1] - before.get("GET unmatched", (0, 0))[1] == MISSES
