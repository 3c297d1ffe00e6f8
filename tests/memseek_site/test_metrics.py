"""``GET /metrics`` in one process: off by default, the key, the exposition parsed by
``prometheus_client``'s own parser, request and model-call series moving (docs/metrics.md)."""
import json
import os
import time

import pytest
import redis
from django.test import Client, override_settings
from prometheus_client.parser import text_string_to_metric_families

from bench.processes import free_port
from catalog_app.llm import ProviderTransport, chat_complete
from memseek_site.queues import LEXICAL, PUBLISHED_AT_HEADER, QUEUES
from tests.catalog_app.test_llm import MESSAGES, models_for
from tests.openai_server import ScriptedOpenAIServer, Status

pytestmark = [pytest.mark.metrics, pytest.mark.django_db]

KEY = "scrape-key-for-tests"
ON = {"METRICS_ENABLED": True, "METRICS_KEY": KEY}


def scrape(client: Client) -> dict[str, dict]:
    """Every sample of the exposition: ``{sample name: {frozenset(labels.items()): value}}``."""
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {KEY}")
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    samples: dict[str, dict] = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples.setdefault(sample.name, {})[frozenset(sample.labels.items())] = sample.value
    return samples


def value(samples, name, **labels) -> float:
    return samples.get(name, {}).get(frozenset(labels.items()), 0.0)


@pytest.mark.parametrize("method", ["get", "post"])
def test_metrics_is_off_by_default_and_answers_like_an_unknown_route(method):
    response = getattr(Client(), method)("/metrics", HTTP_AUTHORIZATION=f"Bearer {KEY}")
    assert response.status_code == 404
    assert response.json()["error"] == "not_found"
    assert Client().get("/metrics-that-does-not-exist").json()["error"] == "not_found"


@pytest.mark.parametrize("header", [None, "", "Bearer", f"Bearer {KEY}x", f"bearer {KEY}", KEY, f"Bearer  {KEY}",
                                    f"Basic {KEY}", "Bearer " + "k" * 10_000, f"Bearer {KEY}\u00e9"])
def test_metrics_refuses_any_other_authorization_with_401(header):
    extra = {} if header is None else {"HTTP_AUTHORIZATION": header}
    with override_settings(MEMSEEK=ON):
        response = Client().get("/metrics", **extra)
    assert response.status_code == 401
    assert response.json()["error"] == "unauthorized"
    assert b"memseek_" not in response.content


def test_metrics_refuses_a_workspace_key(api):
    with override_settings(MEMSEEK=ON):
        response = api.get("/metrics")
    assert response.status_code == 401


def test_enabled_without_a_key_refuses_every_scrape():
    with override_settings(MEMSEEK={"METRICS_ENABLED": True, "METRICS_KEY": ""}):
        for header in ("Bearer ", "Bearer", ""):
            assert Client().get("/metrics", HTTP_AUTHORIZATION=header).status_code == 401


def test_openmetrics_is_answered_when_asked_for():
    with override_settings(MEMSEEK=ON):
        response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {KEY}",
                                HTTP_ACCEPT="application/openmetrics-text; version=1.0.0")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/openmetrics-text")
    assert response.content.rstrip().endswith(b"# EOF")


def test_only_get_is_served():
    with override_settings(MEMSEEK=ON):
        response = Client().post("/metrics", HTTP_AUTHORIZATION=f"Bearer {KEY}")
    assert response.status_code == 405
    assert response.json()["error"] == "method_not_allowed"
    assert response["Allow"] == "GET"


def test_requests_are_counted_by_route_pattern_and_status_with_database_time(api, catalog):
    client = Client()
    with override_settings(MEMSEEK=ON):
        before = scrape(client)
        assert api.get("/views/no-such-view").status_code in (404, 405)
        assert api.get("/health").status_code == 200
        assert api.get("/health").status_code == 200
        assert client.get("/no/such/route").status_code == 404
        after = scrape(client)
    health = {"route": "/health", "method": "GET", "status": "200"}
    assert value(after, "memseek_http_requests_total", **health) - value(before, "memseek_http_requests_total",
                                                                           **health) == 2
    assert (value(after, "memseek_http_request_duration_seconds_count", **health)
            - value(before, "memseek_http_request_duration_seconds_count", **health)) == 2
    assert value(after, "memseek_http_request_db_statements_sum", route="/health") > value(
        before, "memseek_http_request_db_statements_sum", route="/health")
    assert value(after, "memseek_http_request_db_seconds_count", route="/health") - value(
        before, "memseek_http_request_db_seconds_count", route="/health") == 2
    unmatched = {"route": "unmatched", "method": "GET", "status": "404"}
    assert value(after, "memseek_http_requests_total", **unmatched) > value(before, "memseek_http_requests_total",
                                                                             **unmatched)
    # The raw path never becomes a label value: only patterns and "unmatched".
    routes = {dict(labels)["route"] for labels in after["memseek_http_requests_total"]}
    assert "/no/such/route" not in routes and "/views/no-such-view" not in routes
    assert routes <= {"unmatched"} | {route for route in routes if route.startswith("/")}


def test_unknown_methods_share_one_label_value():
    client = Client()
    with override_settings(MEMSEEK=ON):
        for method in ("FROBNICATE", "X" * 300):
            client.generic(method, "/health")
        samples = scrape(client)
    methods = {dict(labels)["method"] for labels in samples["memseek_http_requests_total"]}
    assert "other" in methods
    assert methods <= {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "other"}


def test_backlog_and_slot_gauges_are_read_at_scrape_time(api, catalog):
    client = Client()
    with override_settings(MEMSEEK={**ON, "LEXICAL_RETRIEVAL_SLOTS": 3}):
        samples = scrape(client)
    assert value(samples, "memseek_retrieval_slots") == 3
    assert value(samples, "memseek_retrieval_slots_in_use") == 0
    for name in ("memseek_enrichment_backlog_records", "memseek_enrichment_backlog_oldest_age_seconds",
                 "memseek_lexical_pending_rows"):
        assert name in samples, name
    # Without a broker tasks run in the request: there is no queue to measure.
    assert "memseek_queue_depth" not in samples


def test_queue_gauges_read_each_queue_on_the_redis_broker():
    broker = f"redis://127.0.0.1:6379/{os.environ.get('MEMSEEK_TEST_REDIS_DB', '14')}"
    client = redis.Redis.from_url(broker)
    try:
        client.ping()
    except redis.RedisError:
        pytest.skip("no Redis answers on 127.0.0.1:6379 (CI starts one)")
    client.flushdb()
    published = time.time() - 30
    client.lpush(LEXICAL, json.dumps({"headers": {PUBLISHED_AT_HEADER: published}, "body": ""}))
    client.lpush(LEXICAL, json.dumps({"headers": {PUBLISHED_AT_HEADER: time.time()}, "body": ""}))
    try:
        with override_settings(MEMSEEK=ON, CELERY_TASK_ALWAYS_EAGER=False, CELERY_BROKER_URL=broker):
            samples = scrape(Client())
    finally:
        client.flushdb()
    depths = {dict(labels)["queue"]: sample for labels, sample in samples["memseek_queue_depth"].items()}
    assert depths == {queue: (2 if queue == LEXICAL else 0) for queue in QUEUES}
    ages = {dict(labels)["queue"]: sample for labels, sample in samples["memseek_queue_oldest_age_seconds"].items()}
    assert ages[LEXICAL] >= 30 and all(ages[queue] == 0 for queue in QUEUES if queue != LEXICAL)


def test_model_calls_are_counted_by_provider_and_outcome():
    client = Client()
    with ScriptedOpenAIServer() as server:
        server.chat.append(Status(503))
        models = models_for(
            ("dead", {"adapter": "openai_compat", "base_url": f"http://127.0.0.1:{free_port()}/v1"}),
            ("scripted", {"adapter": "openai_compat", "base_url": server.base_url}),
            targets=["dead:a", "scripted:b"])
        with override_settings(MEMSEEK=ON):
            before = scrape(client)
            with pytest.raises(ProviderTransport):
                chat_complete(models=models, alias="cheap", messages=MESSAGES)
            chat_complete(models=models, alias="cheap", messages=MESSAGES)
            after = scrape(client)

    def moved(provider, outcome):
        labels = {"kind": "chat", "provider": provider, "outcome": outcome}
        return value(after, "memseek_model_calls_total", **labels) - value(before, "memseek_model_calls_total",
                                                                            **labels)
    assert moved("dead", "provider_transport") == 2
    assert moved("scripted", "provider_transport") == 1
    assert moved("scripted", "ok") == 1
