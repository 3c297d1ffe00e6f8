"""The Operations page in Debian's headless Chromium after real traffic: API requests sent over
HTTP to ``live_server`` (ingest, search, a refused request, health checks) appear on the page
with the counts that traffic produced, the plots draw their routes, the ingested records show
in the lag and per-collection figures, and the page is saved to docs/screenshots/operations.png.
``OPERATIONS_FLUSH_S`` is 0 here so each request is written when it is answered, as several
processes' flushes would be after their interval."""
from __future__ import annotations

import json
import os
import re
import time

import pytest
import redis
from django.test import override_settings

from catalog_app.operations.models import RequestMinute
from catalog_app.operations.request_minutes import BUFFER
from catalog_app.services.catalog_load import catalog_load
from catalog_app.services.workspaces import workspace_create
from memseek_site.queues import ENRICHMENT, LEXICAL, PUBLISHED_AT_HEADER
from tests.conftest import EXAMPLE_CATALOG
from tests.ui.test_browser import CHROMIUM, acme, chromium, page, shoot  # noqa: F401  (fixtures)

pytestmark = [
    pytest.mark.model,
    pytest.mark.skipif(not __import__("os").path.exists(CHROMIUM), reason=f"no Chromium at {CHROMIUM}: "
                       "apt-get install chromium (.ci/run does) to run the browser tests"),
]

NOTES = ["Maria asked for the Q3 budget review.", "Maria moved the review to Tuesday.",
         "Ivan booked the venue for the offsite.", "Ivan asked about the travel budget."]


@pytest.fixture
def ops_key(transactional_db):
    workspace, key = workspace_create(name="ops")
    catalog_load(workspace=workspace, directory=EXAMPLE_CATALOG)
    return key


@pytest.fixture
def broker():
    """The test Redis database (``MEMSEEK_TEST_REDIS_DB``) as a Celery broker, emptied before and after."""
    url = f"redis://127.0.0.1:6379/{os.environ.get('MEMSEEK_TEST_REDIS_DB', '14')}"
    client = redis.Redis.from_url(url)
    try:
        client.ping()
    except redis.RedisError:
        pytest.skip("no Redis answers on 127.0.0.1:6379 (CI starts one): the page's queue figures need a broker")
    client.flushdb()
    yield url, client
    client.flushdb()


def waiting(client, queue: str, count: int, age_s: float) -> None:
    """Put ``count`` messages published ``age_s`` seconds ago on ``queue`` (kombu's Redis layout)."""
    for _ in range(count):
        client.lpush(queue, json.dumps({"headers": {PUBLISHED_AT_HEADER: time.time() - age_s}, "body": ""}))


def row(tab, label: str):
    return tab.locator(f'#routes tr[data-route="{label}"]')


@override_settings(MEMSEEK={"OPERATIONS_FLUSH_S": 0})
def test_the_operations_page_shows_the_traffic_it_was_sent(page, ops_key, broker):
    BUFFER.take_if_due(0)
    RequestMinute.objects.all().delete()  # the login's requests: the page shows only what follows
    api = page.context.request
    auth = {"Authorization": f"Bearer {ops_key}"}
    for text in NOTES:  # one batch each: four writes, each enriched when it commits
        entity = "contact.maria" if "Maria" in text else "contact.ivan"
        answer = api.post("/records", headers=auth, data={"records": [
            {"entity": entity, "collection": "main", "type": "event", "text": text}]})
        assert answer.status == 200, answer.text()
    for question in ("budget review", "venue", "travel"):
        answer = api.post("/search", headers=auth, data={"q": question, "mode": "hybrid"})
        assert answer.status == 200, answer.text()
    for _ in range(5):
        assert api.get("/health").status == 200
    assert api.post("/search", headers=auth, data={"q": "budget", "mode": "nope"}).status == 422
    assert api.get("/search", headers={"Authorization": "Bearer wrong"}).status == 401

    # Now a broker with a backlog, read by the page as /health reads it.
    url, client = broker
    waiting(client, ENRICHMENT, 7, age_s=42)
    waiting(client, LEXICAL, 3, age_s=5)
    with override_settings(CELERY_TASK_ALWAYS_EAGER=False, CELERY_BROKER_URL=url):
        page.goto("/console/operations")
    assert page.locator("h1").inner_text() == "Operations"
    counts = {label: row(page, label).locator("td.requests").inner_text()
              for label in ("POST /records", "POST /search", "GET /health", "GET /search")}
    assert counts == {"POST /records": "4", "POST /search": "4", "GET /health": "5", "GET /search": "1"}
    search_cells = row(page, "POST /search").locator("td").all_inner_texts()
    assert search_cells[2:4] == ["1", "0"]  # one 4xx (the unknown mode), no 5xx
    assert row(page, "GET /search").locator("td").all_inner_texts()[2] == "1"  # the 401
    assert re.fullmatch(r"[\d.]+ m?s", row(page, "POST /search").locator("td.p95").inner_text())
    # The busiest routes are plotted: GET /health first, its last point the five requests.
    first = page.locator('#chart-requests g[data-series="GET /health"]')
    assert first.get_attribute("data-values").split(",")[-1] == "5"
    assert page.locator('#chart-p95 g[data-series="POST /records"] circle, '
                        '#chart-p95 g[data-series="POST /records"] polyline').count() >= 1
    assert page.locator("#lag-counts").inner_text() == "4 written, 4 ready"
    assert page.locator('#chart-lag g[data-series="p95"]').get_attribute("data-values").split(",")[-1] != ""
    records = page.locator('#chart-records g[data-series="ops/main"]')
    assert records.get_attribute("data-values").split(",")[-1] == "4"
    assert page.locator("#backlog dd").first.inner_text() == "0"
    depths = {queue: page.locator(f'#queues tr[data-queue="{queue}"] td.depth').inner_text()
              for queue in ("enrichment", "lexical", "maintenance")}
    assert depths == {"enrichment": "7", "lexical": "3", "maintenance": "0"}
    assert page.locator('#chart-queues g[data-series="enrichment"]').get_attribute("data-values") == "7"
    assert float(page.locator('#queues tr[data-queue="enrichment"] td').nth(2).inner_text()) >= 42
    shoot(page, "operations")
