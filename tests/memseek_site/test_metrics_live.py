"""``GET /metrics`` from a live gunicorn with two workers in ``prometheus_client``'s multiprocess
mode: whichever worker answers the scrape, it sums what every worker counted (docs/metrics.md)."""
import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote

import pytest
from django.db import connection
from prometheus_client.parser import text_string_to_metric_families

from bench.processes import Server, database_url
from catalog_app.services.catalog_load import catalog_load
from catalog_app.services.workspaces import workspace_create
from tests.conftest import EXAMPLE_CATALOG, flush_committed_rows

pytestmark = [pytest.mark.metrics, pytest.mark.model, pytest.mark.django_db]

KEY = "live-scrape-key"
SEARCHES = 12


@pytest.fixture(scope="module")
def live(django_db_setup, django_db_blocker, tmp_path_factory):
    with django_db_blocker.unblock():
        _, workspace_key = workspace_create(name="metrics-co")
        catalog_load(workspace=_, directory=EXAMPLE_CATALOG)
    directory = tmp_path_factory.mktemp("prometheus-multiproc")
    server = Server(workers=2, env={"DATABASE_URL": database_url(connection.settings_dict), "CELERY_BROKER_URL": "",
                                    "OMP_NUM_THREADS": "1", "PROMETHEUS_MULTIPROC_DIR": str(directory),
                                    "METRICS_ENABLED": "true", "METRICS_KEY": KEY})
    yield server, workspace_key, directory
    server.stop()
    with django_db_blocker.unblock():
        flush_committed_rows()


def scrape(server) -> dict[str, dict]:
    status, body = server.request("GET", "/metrics", key=KEY)
    assert status == 200, body[:500]
    samples: dict[str, dict] = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            samples.setdefault(sample.name, {})[frozenset(sample.labels.items())] = sample.value
    return samples


def moved(before, after, name, **labels) -> float:
    key = frozenset(labels.items())
    return after.get(name, {}).get(key, 0.0) - before.get(name, {}).get(key, 0.0)


def test_series_are_summed_over_both_workers_and_move_with_traffic(live):
    server, workspace_key, directory = live
    assert server.request("GET", "/metrics")[0] == 401
    assert server.request("GET", "/metrics", key=workspace_key)[0] == 401
    before = scrape(server)

    records = {"records": [{"entity": "contact.maria", "collection": "main", "type": "event",
                            "text": f"Maria noted budget item {i}."} for i in range(3)]}
    assert server.request("POST", "/records", json.dumps(records).encode(), key=workspace_key)[0] == 200

    def search(i):
        return server.request("GET", f"/search?q={quote(f'budget item {i}')}&k=3", key=workspace_key)[0]

    # Concurrent requests, so both workers answer some.
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(search, range(SEARCHES))) == [200] * SEARCHES
    after = scrape(server)

    search_labels = {"route": "/search", "method": "GET", "status": "200"}
    assert moved(before, after, "memseek_http_requests_total", **search_labels) == SEARCHES
    assert moved(before, after, "memseek_http_request_duration_seconds_count", **search_labels) == SEARCHES
    assert moved(before, after, "memseek_http_request_duration_seconds_bucket", le="+Inf", **search_labels) == SEARCHES
    assert moved(before, after, "memseek_http_request_duration_seconds_sum", **search_labels) > 0
    assert moved(before, after, "memseek_http_request_db_seconds_count", route="/search") == SEARCHES
    assert moved(before, after, "memseek_http_request_db_seconds_sum", route="/search") > 0
    assert moved(before, after, "memseek_http_request_db_statements_sum", route="/search") >= SEARCHES
    assert moved(before, after, "memseek_http_requests_total", route="/records", method="POST", status="200") == 1
    # Each distinct query is embedded once, and the write's enrichment embeds its records.
    assert moved(before, after, "memseek_model_calls_total", kind="embedding", provider="local",
                 outcome="ok") >= SEARCHES + 1
    # The refused scrapes were counted too, under the route's pattern.
    refused = frozenset({"route": "/metrics", "method": "GET", "status": "401"}.items())
    assert before["memseek_http_requests_total"][refused] >= 2
    for name in ("memseek_enrichment_backlog_records", "memseek_lexical_pending_rows", "memseek_retrieval_slots_in_use",
                 "memseek_retrieval_slots"):
        assert name in after, name
    assert after["memseek_enrichment_backlog_records"][frozenset()] == 0  # enrichment ran in the request

    # The samples came from the workers' own files in the multiprocess directory.
    writers = {int(match.group(1)) for name in os.listdir(directory) if (match := re.search(r"_(\d+)\.db$", name))}
    assert writers and writers <= set(server.worker_pids())
