#!/usr/bin/env python
"""Context retrieval latency (``POST /retrieve``), beside baselines from the same run.

    python bench/retrieve.py [--size 10000] [--size 100000] [--out DIR] ...
    python -m bench retrieve [same options]

For each corpus size (the corpus of ``bench/search.py``: ``bench/corpus.py`` records in a
``main`` collection plus 3,000 ``deps`` links with real MiniLM vectors cached under
``bench/.cache/``, built once per size by ``bench/search_setup.py``, here into its own database
``memseek_bench_retrieve_<size>``; then ``bench/catalogs/retrieve`` is loaded over it: ``main``
version 2 declares the embedding processor, so the vector leg runs, and five policy records
form the never-truncated ``policies`` section):

1. Server-side latency (p50/p95/p99) of ``retrieval_app.service.retrieve`` for ``{"query": q,
   "tokenBudget": 4000}`` (topN 20, assisted, no rerank): parse, settings, scope, the five legs
   (phase 1 vector + text + policies concurrently, phase 2 graph + entity + derivatives
   concurrently), fusion, reload, five-factor scoring and floor, compile under the budget, the
   receipt INSERT. Timed in this process around the service call, no HTTP. The query embedding
   is excluded (every query is embedded once beforehand and the calls pass a trace whose
   ``query_vector`` looks it up, ``bench/retrieve_tools.py``) and reported on its own, beside a
   raw ``SentenceTransformer.encode``.
   Touch-on-read is off (with a broker it is a queue message after the response).
2. Baselines, interleaved query by query with the service calls (rotating which goes first):
   the hybrid ``POST /search`` service (``search_run``) for the same query (k 20 over the same
   collections, rendered), and the raw SQL of the candidate legs: every statement the legs issued
   for that query (captured from the legs' own connections: text and parameters), replayed
   one after another with plain psycopg on one open connection (the vector leg's ``set_config``
   and query in one transaction, as the leg runs them). The replayed ids are checked against the
   legs' results.
3. Where the time goes: one pass with ``explain: true``; ``diagnostics.latencyMs`` gives each
   stage (and each leg) in milliseconds; the settings/catalog lookup and the receipt INSERT are
   timed by wrappers; the rest of the total is "other" (sections, entries, explanations).

Receipts written by the run are deleted at the end. Writes ``retrieve.json``, ``retrieve.md``
and ``retrieve.png`` (stage shares) to ``--out`` (default bench/results).
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memseek_site.settings")

from bench import harness  # noqa: E402
from bench import search_setup as setup  # noqa: E402
from bench.retrieve_tools import WRAPPED, LegCapture, StageWrappers  # noqa: E402
from bench.tracing import VectorCache  # noqa: E402
from bench.search_setup import latency_summary, progress, replay  # noqa: E402

TOKEN_BUDGET = 4000
TOP_N = 20
MIN_SIZE = 100  # a smoke test's corpus
INCLUDE = ["text", "collection", "type", "occurred_at"]
# (label, key in diagnostics.latencyMs); phase1/phase2 hold the concurrent legs.
STAGES = (("scope compile", "scope"), ("query vector (cache lookup)", "embed"),
          ("legs phase 1 (vector, text, policies)", "phase1"), ("legs phase 2 (graph, entity, derivatives)", "phase2"),
          ("fuse (RRF)", "fuse"), ("reload candidates", "reload"), ("score + floor", "score"),
          ("rerank", "rerank"), ("compile (budget)", "compile"))


RETRIEVE_CATALOG = ROOT / "bench" / "catalogs" / "retrieve"
POLICIES = ("Never share one customer's contact details or deal terms with another customer.",
            "Quote prices only from the current price list; never promise a discount in writing.",
            "Send security and compliance questions to the security team before answering them.",
            "Do not store payment card numbers in notes, emails or memory records.",
            "Address customers by the name and language they chose in their profile.")


def prepare(corpus: dict) -> dict:
    """Load ``bench/catalogs/retrieve`` over the search corpus (``main`` v2 declares the
    embedding processor; a ``policies`` collection with ``conf/retrieval.yaml``) and write the
    policy records once. Idempotent."""
    from catalog_app.models import Record
    from catalog_app.services.catalog_load import catalog_load
    from catalog_app.services.record_ingest import record_ingest_batch

    workspace = corpus["workspace"]
    compiled = catalog_load(workspace=workspace, directory=RETRIEVE_CATALOG)
    workspace.refresh_from_db()
    if not Record.objects.filter(workspace=workspace, collection="policies").exists():
        record_ingest_batch(workspace=workspace, items=[
            {"entity": "platform", "collection": "policies", "type": "policy", "key": f"policy-{index}", "text": text}
            for index, text in enumerate(POLICIES)])
    return {"catalog_changes": [f"{c.action} {c.family} {c.name} v{c.version}" for c in compiled.changes
                                if c.action != "unchanged"],
            "policy_records": Record.objects.filter(workspace=workspace, collection="policies").count()}


def retrieve_body(query: dict, explain: bool = False) -> dict:
    return {"query": query["q"], "tokenBudget": TOKEN_BUDGET, "topN": TOP_N, "explain": explain}


def hybrid_body(query: dict) -> dict:
    return {"mode": "hybrid", "q": query["q"], "scope": {"collections": ["main", "deps"]}, "k": TOP_N,
            "include": INCLUDE, "render": True}


class RetrieveBench:
    def __init__(self, args, size: int, corpus: dict):
        from catalog_app.catalog.runtime import catalog_for_workspace

        self.args, self.size = args, size
        self.workspace, self.items = corpus["workspace"], corpus["items"]
        self.config = catalog_for_workspace(self.workspace).value("models", "models").embedding
        self.queries = setup.query_texts(self.items, args.queries, args.seed)
        self.conn = setup.raw_connection()
        self.cache = VectorCache({})
        self.capture = LegCapture(self.cache)

    def measure_embedding(self) -> tuple[dict, dict]:
        return setup.measure_query_embedding(self.config, self.workspace.pk,
                                             list(dict.fromkeys(q["q"] for q in self.queries)),
                                             f"{self.size}: query embedding")

    def call_retrieve(self, body: dict, trace=None) -> dict:
        from retrieval_app.service import retrieve

        return retrieve(workspace=self.workspace, request=body, trace=trace or self.cache)

    def call_search(self, body: dict) -> dict:
        from search_app.services import search_run

        return search_run(workspace=self.workspace, body=body, trace=self.cache)

    def measure_latency(self) -> dict:
        captured, agreement, sizes = [], [], []
        for query in progress(self.queries, desc=f"{self.size}: warm-up and capture", unit="q"):
            payload = self.call_retrieve(retrieve_body(query), self.capture)
            calls = self.capture.take()
            captured.append(calls)
            self.call_search(hybrid_body(query))
            for call in calls:
                _, results = replay(self.conn, call["statements"])
                if call["ids"] and results:
                    ids = {str(value) for value in results[-1]}
                    agreement.append(ids >= call["ids"] if call["leg"] == "graph" else ids == call["ids"])
            sizes.append({"entries": sum(len(v) for v in payload["sections"].values()),
                          "tokens": payload["compilation"]["totalTokens"],
                          "statements": sum(len(call["statements"]) for call in calls)})
        times = {"retrieve": [], "hybrid": [], "legs_sql": []}
        steps = [("retrieve", lambda q, c: self.call_retrieve(retrieve_body(q))),
                 ("hybrid", lambda q, c: self.call_search(hybrid_body(q))),
                 ("legs_sql", lambda q, c: sum(replay(self.conn, call["statements"])[0] for call in c))]
        load_start = os.getloadavg()[0]
        bar = progress(total=self.args.iterations * len(self.queries), desc=f"{self.size}: timed passes", unit="q")
        for iteration in range(self.args.iterations):
            for index, (query, calls) in enumerate(zip(self.queries, captured)):
                shift = (iteration + index) % len(steps)
                for name, step in steps[shift:] + steps[:shift]:
                    started = time.perf_counter()
                    value = step(query, calls)
                    times[name].append(value if name == "legs_sql" else time.perf_counter() - started)
                bar.update(1)
        bar.close()
        out = {name: latency_summary(values) for name, values in times.items()}
        for name in ("hybrid", "legs_sql"):
            out[f"ratio_p50_{name}"] = out["retrieve"]["p50_ms"] / out[name]["p50_ms"]
            out[f"ratio_p95_{name}"] = out["retrieve"]["p95_ms"] / out[name]["p95_ms"]
        out["legs_sql_agrees"] = f"{sum(agreement)}/{len(agreement)}"
        out["load_average_1m"] = [round(load_start, 2), round(os.getloadavg()[0], 2)]
        out["mean_entries"] = sum(s["entries"] for s in sizes) / len(sizes)
        out["mean_tokens"] = sum(s["tokens"] for s in sizes) / len(sizes)
        out["mean_leg_statements"] = sum(s["statements"] for s in sizes) / len(sizes)
        return out

    def measure_stages(self) -> dict:
        """One pass with ``explain: true``: mean ms per stage and its share of the total."""
        wrappers = StageWrappers(self.cache)
        samples: dict[str, list[float]] = {}
        candidates: dict[str, list[int]] = {}
        for query in progress(self.queries, desc=f"{self.size}: explain pass", unit="q"):
            wrappers.take()
            diagnostics = self.call_retrieve(retrieve_body(query, explain=True), wrappers)["diagnostics"]
            latency = diagnostics["latencyMs"]
            extra = wrappers.take()
            row = {label: latency.get(key, 0.0) for label, key in STAGES}
            row.update({label: extra.get(label, 0.0) for label, _ in WRAPPED})
            row["other (sections, entries, explanations)"] = latency["total"] - sum(row.values())
            row.update({f"leg: {name}": ms for name, ms in latency["legs"].items()})
            row["total"] = latency["total"]
            for label, value in row.items():
                samples.setdefault(label, []).append(value)
            for leg, count in diagnostics["candidates"].items():
                candidates.setdefault(leg, []).append(count)
        n = len(self.queries)
        total = sum(samples["total"]) / n
        stages = {}
        for label, values in samples.items():
            mean = sum(values) / n
            stages[label] = {"mean_ms": mean, "share": mean / total if not label.startswith("leg:") and
                             label != "total" else None, "nested": label.startswith("leg:")}
        return {"total_mean_ms": total, "stages": stages,
                "candidates_mean": {leg: sum(v) / n for leg, v in candidates.items()}}

    def explain_vector(self) -> dict:
        """EXPLAIN (ANALYZE, BUFFERS) of the vector leg's query for the first query text."""
        import psycopg

        query = self.queries[0]
        self.call_retrieve(retrieve_body(query), self.capture)
        call = next(call for call in self.capture.take() if call["leg"] == "vector")
        cursor = psycopg.ClientCursor(self.conn)
        with self.conn.transaction():
            cursor.execute(*call["statements"][0])
            cursor.fetchall()
            sql, params = call["statements"][1]
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
            # The 384-number query vector literal would fill the report; it is elided.
            plan = [re.sub(r"'\[[^\]]{200,}\]'", "'[query vector]'", row[0]) for row in cursor.fetchall()]
        return {"query": query["q"], "plan": plan, "uses_hnsw_index": any("record_embedding_hnsw_" in line
                                                                          for line in plan)}

    def close(self) -> None:
        self.conn.close()


def run_size(args, size: int) -> dict:
    database = f"{args.database_prefix}_{size}"
    with setup.bench_database(database, drop=args.drop, cache=args.cache):
        return _run_size(args, size, database)


def _run_size(args, size: int, database: str) -> dict:
    from django.conf import settings

    from retrieval_app.models import Receipt

    started = time.perf_counter()
    corpus = setup.build_corpus(size, database=database, rebuild=args.rebuild, seed=args.seed, cache=args.cache)
    prepared = prepare(corpus)
    bench = RetrieveBench(args, size, corpus)
    previous = dict(getattr(settings, "MEMSEEK", {}) or {})
    settings.MEMSEEK = {**previous, "TOUCH_ON_READ": False}
    since = datetime.now(timezone.utc)
    out: dict = {"size": size, "build": corpus["build"], "prepared": prepared, "queries": len(bench.queries),
                 "iterations": args.iterations, "query_samples": [q["q"] for q in bench.queries[:6]]}
    try:
        out["embedding"], vectors = bench.measure_embedding()
        bench.cache.vectors = vectors
        out["latency"] = bench.measure_latency()
        out["stages"] = bench.measure_stages()
        out["explain_vector"] = bench.explain_vector()
        out["vector_cache_misses"] = bench.cache.misses
    finally:
        settings.MEMSEEK = previous
        deleted, _ = Receipt.objects.filter(workspace=bench.workspace, created_at__gte=since).delete()
        out["receipts_deleted"] = deleted
        bench.close()
    out["seconds"] = time.perf_counter() - started
    return out


def main(argv=None) -> int:
    from bench.retrieve_report import markdown_report, plot

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, action="append", help="corpus size (repeatable; default 10000)")
    harness.add_out_argument(parser)
    parser.add_argument("--rebuild", action="store_true", help="drop and rebuild the corpus database(s)")
    parser.add_argument("--iterations", type=int, default=5, help="timed passes over the queries (default 5)")
    parser.add_argument("--queries", type=int, default=50, help="query texts (default 50, at least 5)")
    parser.add_argument("--database-prefix", default="memseek_bench_retrieve",
                        help="corpus databases are PREFIX_<size> (default memseek_bench_retrieve)")
    harness.add_seed_argument(parser, setup.SEED)
    parser.add_argument("--cache", type=Path, default=setup.CACHE,
                        help="directory of the cached vectors and build info (default bench/.cache)")
    parser.add_argument("--drop", action="store_true",
                        help="drop the corpus database(s) and their build info at the end (a throwaway run)")
    args = parser.parse_args(argv)
    args.size = args.size or [10_000]
    if args.queries < 5 or args.iterations < 1 or any(s < MIN_SIZE for s in args.size):
        parser.error(f"--queries must be at least 5, --iterations at least 1, sizes at least {MIN_SIZE}")

    setup.django_setup()
    started = time.perf_counter()
    results = {"started_at": harness.now(),
               "environment": setup.environment(),
               "parameters": {"sizes": args.size, "iterations": args.iterations, "queries": args.queries,
                              "token_budget": TOKEN_BUDGET, "top_n": TOP_N, "seed": args.seed,
                              "touch_on_read": False, "hybrid_body": hybrid_body({"q": "<query>"})},
               "sizes": {}}
    for size in args.size:
        results["sizes"][str(size)] = run_size(args, size)
    results["seconds"] = time.perf_counter() - started
    harness.publish(results, out=args.out, name="retrieve", report=markdown_report, plot=plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
