"""``bench observability``: what ``GET /metrics``'s per-request instruments and OpenTelemetry
tracing add to a request (docs/metrics.md).

``bench/corpus.py`` records are written with ``record_ingest_batch`` into
``bench/catalogs/search`` (the bundled model embeds them) in their own database
``<prefix>_<size>``. Then, in-process through Django's test client, ``GET /search`` (hybrid, the
example's quick form) for each query and ``GET /health`` (the smallest request: the fixed cost)
run in three configurations:

* ``baseline``: the middleware stack without ``RequestMetricsMiddleware``, tracing off;
* ``metrics``: the service's stack (the middleware counts, times and wraps every statement);
* ``metrics + tracing``: tracing on as ``tracing_configure`` installs it (Django, Celery and
  psycopg instrumentations, memory-operation and stage spans), every span handed in the request
  to an exporter that drops it (``SimpleSpanProcessor``: an upper bound on the batched exporter's
  in-request cost).

Tracing is process-wide, so the rounds alternate blocks: each round runs every query in
``baseline`` and ``metrics`` (alternating request by request, rotating which goes first), then
switches tracing on and runs them in ``metrics + tracing``, then off again. Every query is run
once before timing, so the query-embedding cache holds its vector in every configuration and the
figures exclude the model. Writes ``observability.json`` and ``observability.md``.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from bench import harness
from bench import search_setup as setup
from bench.search_setup import latency_summary

ROOT = Path(__file__).resolve().parent.parent
CATALOG = ROOT / "bench" / "catalogs" / "search"
METRICS_MIDDLEWARE = "memseek_site.metrics_http.RequestMetricsMiddleware"
CONFIGS = ("baseline", "metrics", "metrics + tracing")


class _DroppingExporter:
    """A span exporter that keeps nothing."""

    def export(self, spans):
        from opentelemetry.sdk.trace.export import SpanExportResult

        return SpanExportResult.SUCCESS

    def shutdown(self):
        pass

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def build(size: int) -> tuple[str, list[str]]:
    """A workspace holding ``size`` corpus records; returns its key and the query texts."""
    from catalog_app.services.catalog_load import catalog_load
    from catalog_app.services.record_ingest import record_ingest_batch
    from catalog_app.services.workspaces import workspace_create

    items = setup.corpus_items(size)
    workspace, key = workspace_create(name=f"bench-observability-{time.time_ns()}")
    catalog_load(workspace=workspace, directory=CATALOG)
    for start in range(0, size, 100):
        record_ingest_batch(workspace=workspace, items=items[start:start + 100])
    return key, [query["q"] for query in setup.query_texts(items, 20)]


def _client(key: str):
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert client.get("/health").status_code == 200  # loads the middleware chain now
    return client


def _paths(queries: list[str]) -> list[str]:
    from urllib.parse import quote

    return [f"/search?q={quote(q)}&k=10" for q in queries] + ["/health"] * len(queries)


def _timed(client, path: str, into: dict, config: str) -> None:
    started = time.perf_counter()
    response = client.get(path)
    elapsed = time.perf_counter() - started
    assert response.status_code == 200, (path, response.status_code)
    into[config]["health" if path == "/health" else "search"].append(elapsed)


def run(key: str, queries: list[str], rounds: int) -> dict:
    from django.conf import settings
    from django.db import connections
    from django.test import override_settings

    from memseek_site import parallel
    from memseek_site.tracing import tracing_configure, tracing_stop

    with override_settings(MIDDLEWARE=[name for name in settings.MIDDLEWARE if name != METRICS_MIDDLEWARE]):
        baseline = _client(key)
    metrics = _client(key)
    paths = _paths(queries)
    for path in paths:  # warm: the query vectors cached, the connections open
        baseline.get(path)
    seconds = {config: {"search": [], "health": []} for config in CONFIGS}
    for round_ in range(rounds):
        for index, path in enumerate(paths):
            pair = (baseline, "baseline"), (metrics, "metrics")
            for client, config in harness.in_turn(pair, index + round_):
                _timed(client, path, seconds, config)
        tracing_configure(exporter=_DroppingExporter())
        connections.close_all()
        parallel.shutdown()  # new connections, so the psycopg instrumentation sees them
        traced = _client(key)
        traced.get(paths[0])
        for path in paths:
            _timed(traced, path, seconds, "metrics + tracing")
        tracing_stop()
        connections.close_all()
        parallel.shutdown()
        metrics.get(paths[0])
    return seconds


def summary(seconds: dict) -> list[dict]:
    rows = []
    for request in ("search", "health"):
        base = latency_summary(seconds["baseline"][request])
        for config in CONFIGS:
            figures = latency_summary(seconds[config][request])
            rows.append({"request": request, "config": config, **figures,
                         "ratio_p50": figures["p50_ms"] / base["p50_ms"],
                         "ratio_p95": figures["p95_ms"] / base["p95_ms"]})
    return rows


def markdown(payload: dict) -> str:
    lines = [f"# Observability cost at {payload['size']} records",
             "",
             f"`GET /search` (hybrid, {payload['queries']} queries, query vectors cached) and `GET /health`, "
             f"in-process, {payload['rounds']} rounds; ratios are to `baseline` (no metrics middleware, "
             "tracing off) in the same run.",
             "",
             "| Request | Configuration | Requests | p50 ms | p95 ms | p50 ratio | p95 ratio |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for row in payload["rows"]:
        lines.append(f"| {row['request']} | {row['config']} | {row['n']} | {row['p50_ms']:.2f} | "
                     f"{row['p95_ms']:.2f} | {row['ratio_p50']:.2f} | {row['ratio_p95']:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    harness.add_database_arguments(parser, prefix="memseek_bench_observability")
    harness.add_out_argument(parser)
    args = parser.parse_args(argv)
    setup.django_setup()
    database = f"{args.database_prefix}_{args.size}"
    with setup.bench_database(database, drop=args.drop, cache=setup.CACHE):
        setup.use_bench_database(database)
        key, queries = build(args.size)
        seconds = run(key, queries[:args.queries], args.rounds)
    payload = {"size": args.size, "queries": min(args.queries, len(queries)), "rounds": args.rounds,
               "rows": summary(seconds), "environment": setup.environment()}
    harness.publish(payload, out=args.out, name="observability", report=markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
