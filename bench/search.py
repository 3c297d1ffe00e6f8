#!/usr/bin/env python
"""Search latency and throughput of Memseek, each figure beside its baseline from the same run.

    python bench/search.py [--size 10000] [--size 100000] [--out DIR] [--rebuild] ...
    python -m bench search [same options]

For each corpus size (``bench/corpus.py`` records in a ``main`` collection plus a
dependency-like ``deps`` link collection; built once per size into its own database,
``memseek_bench_<size>``, see ``bench/search_setup.py``):

1. Server-side latency (p50/p95/p99) of ``search_run`` (POST /search's service: parse, resolve,
   candidates, reload, recheck, rank, present, render) for hybrid, vector, text and structured
   searches (k=20, ``include`` and ``render`` as ``GET /search`` sends them), for combined
   searches of 2 and 4 sources, for a two-source view (``view_query``) and for graph views at
   depth 1-4. Timed in this process around the service call for an already parsed JSON body:
   no HTTP. Query embedding is excluded: every query is embedded once beforehand and every
   call passes a trace (``search_app.engine.trace``) whose ``query_vector`` looks it up; the
   embedding is reported on its own (``embed_query`` beside a raw ``SentenceTransformer.encode``).
   Touch-on-read is off (``TOUCH_ON_READ=False``): with a broker it is a queue message after
   the response; its eager in-process cost is reported separately. Before the timed passes the
   process's objects (the corpus items among them) are frozen out of the garbage collector, as
   the WSGI worker freezes its own at startup (``gc.freeze``).
2. Baselines, interleaved query by query with the service calls (alternating which goes
   first): the exact candidate SQL the backend issued for the same request (captured from the
   service's own connection: statement text and parameters), replayed with plain psycopg
   (client-side binding like Django's, autocommit; the vector channel's ``set_config`` and
   query in one transaction, as the backend runs them). Hybrid replays its three channel
   queries one after another (the service runs them concurrently on its thread pool, so its
   candidate stage can take less wall time than their sum); combined searches and views the
   sum of their sources' candidate SQL; graph views a plain recursive CTE returning the same
   paths and cited links. Each replay's ids are checked
   against the service's candidates (graph: against its paths). Then the same passes of the
   service alone (``service_warm``): the steady state, which the absolute targets (hybrid and
   fused view p50) are held to, since a lexical channel's baseline, the exact scan the index
   replaces, reads the whole corpus and leaves every interleaved sample a cold one.
3. Requests per second with 1, 4 and 16 concurrent client threads against ``gunicorn
   memseek_site.wsgi`` (sync workers, one per core) on 127.0.0.1 for POST /search hybrid (the
   server embeds every query itself here), beside GET /health at the same concurrency (the
   framework floor); resident memory of the workers with the model loaded beside a bare
   ``python -c "import django"``.

Writes ``search.json``, ``search.md`` and ``search.png`` to ``--out`` (default bench/results).
"""
from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import pstats
import random
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memseek_site.settings")

from bench import harness  # noqa: E402
from bench import search_setup as setup  # noqa: E402
from bench.processes import Server, database_url  # noqa: E402
from bench.search_setup import latency_summary, log, percentile, progress, replay  # noqa: E402
from bench.tracing import Cached, VectorCache  # noqa: E402
from search_app.engine.trace import Trace  # noqa: E402

K = 20
GRAPH_LIMIT = 100
GRAPH_DEPTHS = (1, 2, 3, 4)
HYBRID_RATIO_TARGET = 1.5
HYBRID_P50_TARGET_MS = 30.0
FUSED_VIEW = "view bm25_and_vector (fused, workspace-wide)"
FUSED_P50_TARGET_MS = 40.0
TARGET_SIZE = 100_000
MIN_SIZE = 100  # a smoke test's corpus
INCLUDE = ["text", "collection", "type", "occurred_at"]  # what GET /search asks for
TOPICS = ("budget", "renewal", "pricing", "onboarding", "outage", "latency", "invoice", "contract", "security",
          "compliance", "training", "integration", "roadmap", "churn-risk", "expansion", "feedback", "delivery",
          "hiring", "procurement", "escalation")


# ---------------------------------------------------------------------------------------------
# Request bodies


MODES = ("hybrid", "vector", "text", "structured")  # the single-source searches, in report order


def mode_body(mode: str, query: dict, index: int) -> dict:
    body = {"mode": mode, "scope": {"collections": ["main"]}, "k": K, "include": INCLUDE, "render": True}
    if mode == "structured":
        body["where"] = {"tags": {"contains_any": [TOPICS[index % len(TOPICS)]]}}
        body["order_by"] = [{"field": "speaker", "direction": "asc"}]
    else:
        body["q"] = query["q"]
    return body


SOURCES_4 = (
    {"name": "events", "mode": "hybrid", "scope": {"collections": ["main"], "keyed": False}, "k": K},
    {"name": "facts", "mode": "vector", "scope": {"collections": ["main"], "keyed": True}, "k": K},
    {"name": "lexical", "mode": "text", "scope": {"collections": ["main"]}, "k": K},
    {"name": "conversations", "mode": "vector", "scope": {"collections": ["main"], "types": ["call", "meeting"]},
     "k": K},
)


def multi_body(count: int, query: dict) -> dict:
    return {"q": query["q"], "sources": [dict(source) for source in SOURCES_4[:count]], "fuse": {"kind": "rrf"},
            "k": K, "include": INCLUDE, "render": True}


def events_view_body(query: dict) -> dict:
    """The parameters of view ``events_and_facts`` (two sources over one contact) for ``query``."""
    return {"entity": query["entity"], "task": query["q"]}


def fused_view_body(query: dict) -> dict:
    """The parameters of view ``bm25_and_vector`` (workspace-wide) for ``query``."""
    return {"task": query["q"]}


# ---------------------------------------------------------------------------------------------
# Instrumentation, through the pipeline's trace hook (search_app.engine.trace): the query-vector
# cache, candidate SQL capture, stage timers


class SqlCapture(Cached):
    """Records, per source, every statement its candidate channels execute (text and parameters,
    channel by channel in the backend's merge order), the candidate cap and the ids the backend
    proposed. Channels may run on the engine's pool threads: each channel stage captures on the
    connection of the thread running it."""

    CHANNELS = ("channel vector", "channel text", "channel bm25", "channel recent", "channel structured")  # merge order
    # A lexical channel that read the term index is replayed as the exact scan of the same
    # contract (``pg_bm25.scan_candidates``: statistics and ranking over every record in scope),
    # captured right after it in the untimed pass: that is the raw work the index replaces, and
    # its ids must equal the index's.
    LEXICAL = {"channel text": "english", "channel bm25": "bm25_v1"}

    def __init__(self, cache: VectorCache):
        super().__init__(cache)
        self.calls: list[dict] = []
        self.lock = threading.Lock()
        self.pending: dict[int, dict[str, list]] = {}  # id(resolved) -> channel -> statements
        self.q: str | None = None  # the query text of the request being captured
        self.workspace_id: int | None = None

    @contextmanager
    def stage(self, name, source=None):
        if name not in self.CHANNELS:
            yield
            return
        from django.db import connection

        statements = []

        def wrapper(execute, sql, params, many, ctx):
            statements.append((sql, list(params) if params is not None else None))
            return execute(sql, params, many, ctx)

        with connection.execute_wrapper(wrapper):
            yield
        # after django.setup(): `python bench/search.py` too
        from catalog_app.lexical.tables import DOCUMENT, SOURCE_TOTALS

        # the vector channel's workspace-size probe answers a count, not candidates
        statements = [(sql, params) for sql, params in statements if SOURCE_TOTALS not in sql]
        if name in self.LEXICAL and any(DOCUMENT in sql for sql, _ in statements):
            statements = self._scan_statements(source, self.LEXICAL[name])
        with self.lock:
            self.pending.setdefault(id(source), {})[name] = statements

    def _scan_statements(self, source, analyzer: str) -> list:
        from django.db import connection

        from catalog_app.bm25_terms import bm25_query_terms
        from search_app.backends.pg_bm25 import scan_candidates
        from search_app.backends.pg_index import english_terms

        terms = english_terms(self.q) if analyzer == "english" else tuple(bm25_query_terms(self.q or ""))
        statements = []

        def wrapper(execute, sql, params, many, ctx):
            statements.append((sql, list(params) if params is not None else None))
            return execute(sql, params, many, ctx)

        with connection.execute_wrapper(wrapper):
            scan_candidates(source, self.workspace_id, analyzer, terms, source.source.candidate_cap())
        return statements

    def produced(self, name, items, source=None):
        if name != "candidates":
            return
        with self.lock:
            by_channel = self.pending.pop(id(source), {})
            statements = [statement for channel in self.CHANNELS for statement in by_channel.get(channel, [])]
            self.calls.append({"source": source.source.name, "mode": source.source.mode,
                               "cap": source.source.candidate_cap(), "statements": statements, "ids": items})

    def take(self) -> list[dict]:
        with self.lock:
            calls, self.calls = self.calls, []
        order = {source["name"]: i for i, source in enumerate(SOURCES_4)}
        return sorted(calls, key=lambda call: order.get(call["source"], -1))


STAGES = (
    # (label, trace stage (search_app.engine.trace.SEARCH_STAGES), nested-in)
    ("catalog lookup", "catalog lookup", None),
    ("parse", "parse", None),
    ("resolve", "resolve", None),
    ("query vector (cache lookup)", "query vector", None),
    ("candidate SQL", "candidates", None),
    # each channel on its own row, inside the candidate SQL (channels run concurrently)
    *((f"candidate SQL: {channel}", channel, "candidate SQL") for channel in SqlCapture.CHANNELS),
    ("reload SQL", "reload", None),
    ("recheck", "recheck", None),
    ("rank (expression)", "rank", None),
    ("rank (order)", "order", None),
    ("rank (structured order)", "structured order", None),
    ("fuse", "fuse", None),
    ("finalize (scores, cut)", "finalize", None),
    ("present (hits, render)", "present", None),
    ("render (cl100k fitting)", "render", "present (hits, render)"),
    ("serialize (size check)", "serialize", None),
    ("DB connect", None, None),  # a thread's connection opened as one of SQL_STAGES starts
)
SQL_STAGES = frozenset({"catalog lookup", "candidates", "reload", *SqlCapture.CHANNELS})


class StageTimer(Cached):
    """Times the pipeline's stages (a separate pass: the timers add a little overhead). Stage times
    are summed per request across threads. A thread whose database connection is closed when a
    stage that issues SQL starts opens it first, timed as ``DB connect`` outside the stage."""

    def __init__(self, cache: VectorCache):
        super().__init__(cache)
        self.labels = {stage: label for label, stage, _nested in STAGES if stage is not None}
        self.current: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.lock = threading.Lock()

    @contextmanager
    def stage(self, name, source=None):
        label = self.labels.get(name)
        if label is None:
            yield
            return
        if name in SQL_STAGES:
            from django.db import connection

            if connection.connection is None:
                with self._timed("DB connect"):
                    connection.ensure_connection()
        with self._timed(label):
            yield

    @contextmanager
    def _timed(self, label: str):
        started, cpu_started = time.perf_counter(), time.thread_time()
        try:
            yield
        finally:
            elapsed, cpu = time.perf_counter() - started, time.thread_time() - cpu_started
            with self.lock:
                self.current[label] = self.current.get(label, 0.0) + elapsed
                self.cpu[label] = self.cpu.get(label, 0.0) + cpu

    def take(self) -> tuple[dict[str, float], dict[str, float]]:
        """(wall seconds, this process's CPU seconds) per stage since the last take."""
        with self.lock:
            current, self.current = self.current, {}
            cpu, self.cpu = self.cpu, {}
        return current, cpu


# ---------------------------------------------------------------------------------------------
# Baseline replays


def _channel_rank(sql: str) -> int:
    """The position of a channel query in ``pg_backend.candidate_ids``'s interleave (vector,
    text, bm25, recent)."""
    if "<=>" in sql:
        return 0
    if "search_vector" in sql:  # the text channel's scan (lexemes of the stored tsvector)
        return 1
    if "WITH d AS MATERIALIZED" in sql:  # the BM25 channel's scan
        return 2
    return 3


def merged(call: dict, channels: list[list]) -> list:
    """The candidate list the backend builds from the replayed channel results."""
    from search_app.engine.candidates import interleave

    if len(channels) == 1:
        return channels[0]
    queries = [sql for sql, _ in call["statements"] if not sql.lstrip().startswith("SELECT set_config")]
    # the vector channel's scope-size probe (entity scopes) answers a count and the text channel's
    # lexeme lookup the query's lexemes, not candidates
    pairs = [(sql, channel) for sql, channel in zip(queries, channels)
             if not sql.startswith("SELECT count(*) FROM") and "tsvector_to_array" not in sql]
    ordered = [channel for _, channel in sorted(pairs, key=lambda pair: _channel_rank(pair[0]))]
    return interleave(ordered, call["cap"])


GRAPH_CTE = """
WITH RECURSIVE edges AS (
    SELECT r.id, r.content ->> 'src' AS src, r.content ->> 'dst' AS dst
    FROM catalog_app_record r
    WHERE r.workspace_id = %(ws)s AND r.collection = 'deps' AND r.enriched_at IS NOT NULL AND NOT r.tombstone
      AND r.status = 'active'
      AND (r.key IS NULL OR NOT EXISTS (SELECT 1 FROM catalog_app_record newer
           WHERE newer.workspace_id = r.workspace_id AND newer.entity = r.entity AND newer.collection = r.collection
             AND newer.key = r.key AND newer.status = r.status AND newer.seq > r.seq))
), walk (nodes, link_ids, depth) AS (
    SELECT ARRAY[e.src, e.dst], ARRAY[e.id::text], 1 FROM edges e WHERE e.src = %(seed)s
    UNION ALL
    SELECT w.nodes || e.dst, w.link_ids || e.id::text, w.depth + 1
    FROM walk w JOIN edges e ON e.src = w.nodes[w.depth + 1]
    WHERE w.depth < %(depth)s AND e.dst <> ALL (w.nodes)
), top AS (
    SELECT nodes, link_ids, depth FROM walk ORDER BY depth, nodes COLLATE "C", link_ids COLLATE "C" LIMIT %(limit)s
)
SELECT nodes, link_ids, NULL::text, NULL::jsonb FROM top
UNION ALL
SELECT NULL, ARRAY[r.id::text], r.text, r.content FROM catalog_app_record r
WHERE r.id IN (SELECT unnest(link_ids)::uuid FROM top)
"""


def graph_raw(conn, workspace_id: int, seed: str, depth: int, limit: int) -> tuple[float, list, bool]:
    """The recursive CTE baseline; returns (seconds, the first ``limit`` paths, truncated)."""
    started = time.perf_counter()
    rows = conn.execute(GRAPH_CTE, {"ws": workspace_id, "seed": seed, "depth": depth, "limit": limit + 1}).fetchall()
    elapsed = time.perf_counter() - started
    paths = [(tuple(row[0]), tuple(row[1])) for row in rows if row[0] is not None]
    # The citation rows are for links of the limit+1 paths; the service cites those of the first limit.
    return elapsed, paths[:limit], len(paths) > limit


# ---------------------------------------------------------------------------------------------
# Measuring


class Bench:
    def __init__(self, args, size: int, corpus: dict):
        from catalog_app.catalog.runtime import catalog_for_workspace

        self.args, self.size = args, size
        self.workspace, self.key, self.items = corpus["workspace"], corpus["key"], corpus["items"]
        self.catalog = catalog_for_workspace(self.workspace)
        self.config = self.catalog.value("models", "models").embedding
        self.queries = setup.query_texts(self.items, args.queries, args.seed)
        self.conn = setup.raw_connection()
        self.cache = VectorCache({})
        self.capture = SqlCapture(self.cache)
        self.capture.workspace_id = self.workspace.pk
        rng = random.Random(f"graph-seeds-{args.seed}")
        self.graph_seeds = [setup.graph_node(rng.randrange(setup.graph_nodes(size))) for _ in range(args.queries)]

    # -- query embedding ------------------------------------------------------------------------

    def measure_embedding(self, threads: int | None = None) -> tuple[dict, dict[str, list[float]]]:
        """``embed_query`` beside a raw ``encode`` of the same texts, at torch's default intra-op
        thread count or at ``threads``."""
        import torch

        default_threads = torch.get_num_threads()
        if threads:
            torch.set_num_threads(threads)
        try:
            result, vectors = setup.measure_query_embedding(
                self.config, self.workspace.pk, list(dict.fromkeys(q["q"] for q in self.queries)),
                f"{self.size}: query embedding ({torch.get_num_threads()} torch threads)", self.args.embedding_passes)
        finally:
            torch.set_num_threads(default_threads)
        result["torch_threads"] = threads or default_threads
        return result, vectors

    # -- service calls ------------------------------------------------------------------------

    def call_search(self, body: dict, trace: Trace | None = None) -> dict:
        from search_app.services import search_run

        return search_run(workspace=self.workspace, body=body, trace=trace or self.cache)

    def call_view(self, name: str, body: dict, trace: Trace | None = None) -> dict:
        from search_app.views.service import view_query

        return view_query(workspace=self.workspace, name=name, body=body, trace=trace or self.cache)

    def _interleaved(self, label: str, cases: list, service, baseline, *, verify=None) -> dict:
        """Warm up once, capture, then ``iterations`` passes over ``cases``; each case runs the
        service (``service(case, trace)``) and its baseline back to back (alternating which goes
        first). Then ``iterations`` passes of the service alone (``service_warm``)."""
        captured, payloads = [], []
        for case in cases:  # warm-up and capture (not timed)
            self.capture.q = case.get("q", case.get("task"))
            payloads.append(service(case, self.capture))
            calls = self.capture.take()
            captured.append(calls)
            baseline(case, calls)
        agreement = [verify(*triple) for triple in zip(cases, captured, payloads)] if verify else []
        service_times, baseline_times = [], []
        load_start = os.getloadavg()[0]
        total = self.args.iterations * len(cases)
        bar = progress(total=total, desc=f"{self.size}: {label}", unit="req")
        for iteration in range(self.args.iterations):
            for case, calls in zip(cases, captured):
                steps = (("service", case, calls), ("baseline", case, calls))
                for name, c, cl in harness.in_turn(steps, iteration):
                    if name == "service":
                        started = time.perf_counter()
                        service(c)
                        service_times.append(time.perf_counter() - started)
                    else:
                        baseline_times.append(baseline(c, cl))
                bar.update(1)
        # The same passes again without the baselines: a lexical baseline is an exact scan of the
        # corpus (seconds), which evicts the index's pages from the caches before every
        # interleaved sample; these are the steady-state figures the absolute targets are held to.
        warm_times = []
        for _ in range(self.args.iterations):
            for case in cases:
                started = time.perf_counter()
                service(case)
                warm_times.append(time.perf_counter() - started)
        bar.close()
        result = {"name": label, "service": latency_summary(service_times),
                  "service_warm": latency_summary(warm_times), "baseline": latency_summary(baseline_times),
                  "load_average_1m": [round(load_start, 2), round(os.getloadavg()[0], 2)]}
        result["ratio_p50"] = result["service"]["p50_ms"] / result["baseline"]["p50_ms"]
        result["ratio_p95"] = result["service"]["p95_ms"] / result["baseline"]["p95_ms"]
        if verify:
            result["baseline_agrees"] = f"{sum(agreement)}/{len(agreement)}"
        if any(captured):
            result["baseline_statements_per_request"] = sum(
                len(call["statements"]) for calls in captured for call in calls) / len(captured)
        candidate_counts = [sum(len(call["ids"]) for call in calls) for calls in captured]
        if candidate_counts and any(candidate_counts):
            result["candidates_mean"] = sum(candidate_counts) / len(candidate_counts)
        return result

    def _replay_baseline(self, case, calls) -> float:
        return sum(replay(self.conn, call["statements"])[0] for call in calls)

    def _verify_candidates(self, case, calls, payload) -> bool:
        return all(merged(call, replay(self.conn, call["statements"])[1]) == call["ids"] for call in calls)

    def measure_modes(self) -> list[dict]:
        results = []
        for mode in MODES:
            cases = [mode_body(mode, query, index) for index, query in enumerate(self.queries)]
            result = self._interleaved(mode, cases, self.call_search, self._replay_baseline,
                                       verify=self._verify_candidates)
            result.update(kind="mode", baseline_label=self._baseline_label(mode))
            results.append(result)
        return results

    @staticmethod
    def _baseline_label(mode: str) -> str:
        return {"hybrid": "raw SQL of the 3 candidate channels (vector HNSW, text: the exact scan the lexical index "
                          "replaces, recent), one after another (the service runs them concurrently)",
                "vector": "raw SQL: HNSW candidate query (with its set_config)",
                "text": "raw SQL: the exact scan of the text channel (BM25 over the English lexemes of every "
                        "record in scope) that the lexical index replaces",
                "structured": "raw SQL: filtered, ordered candidate query"}[mode]

    def measure_multi(self, single_hybrid: dict) -> list[dict]:
        results = []
        for count in (2, 4):
            cases = [multi_body(count, query) for query in self.queries]
            result = self._interleaved(f"{count} sources (RRF)", cases, self.call_search, self._replay_baseline,
                                       verify=self._verify_candidates)
            result.update(kind="multi", sources=count, baseline_label=f"sum of the {count} sources' raw candidate SQL",
                          single_hybrid_p50_ms=single_hybrid["service"]["p50_ms"],
                          ratio_to_single_hybrid_p50=result["service"]["p50_ms"] / single_hybrid["service"]["p50_ms"],
                          sources_spec=[{k: v for k, v in s.items() if k != "k"} for s in SOURCES_4[:count]])
            results.append(result)
        cases = [events_view_body(query) for query in self.queries]
        result = self._interleaved("view events_and_facts (2 sources)", cases,
                                   lambda body, trace=None: self.call_view("events_and_facts", body, trace),
                                   self._replay_baseline,
                                   verify=self._verify_candidates)
        result.update(kind="view", sources=2, baseline_label="sum of the 2 sources' raw candidate SQL",
                      ratio_to_single_hybrid_p50=result["service"]["p50_ms"] / single_hybrid["service"]["p50_ms"])
        results.append(result)
        cases = [fused_view_body(query) for query in self.queries]
        result = self._interleaved(FUSED_VIEW, cases,
                                   lambda body, trace=None: self.call_view("bm25_and_vector", body, trace),
                                   self._replay_baseline, verify=self._verify_candidates)
        result.update(kind="view", sources=2, baseline_label="the BM25 source's exact scan (what the index replaces) "
                                                             "plus the vector source's HNSW SQL",
                      ratio_to_single_hybrid_p50=result["service"]["p50_ms"] / single_hybrid["service"]["p50_ms"])
        results.append(result)
        return results

    def measure_graph(self) -> list[dict]:
        results = []
        for depth in GRAPH_DEPTHS:
            cases = [{"seed": seed, "depth": depth, "limit": GRAPH_LIMIT, "direction": "out"}
                     for seed in self.graph_seeds]
            paths_returned, truncated = [], []

            def service(body, trace=None):
                return self.call_view("dep_graph", body, trace)

            def baseline(body, _calls):
                return graph_raw(self.conn, self.workspace.pk, body["seed"], body["depth"], body["limit"])[0]

            def verify(body, _calls, payload):
                _, paths, was_truncated = graph_raw(self.conn, self.workspace.pk, body["seed"], body["depth"],
                                                    body["limit"])
                mine = [(tuple(p["nodes"]), tuple(p["edge_ids"])) for p in payload["paths"]]
                paths_returned.append(len(mine))
                truncated.append(payload["truncated"])
                return mine == paths and was_truncated == payload["truncated"]

            result = self._interleaved(f"graph depth {depth}", cases, service, baseline, verify=verify)
            result.update(kind="graph", depth=depth, limit=GRAPH_LIMIT,
                          baseline_label="recursive CTE (same paths, limit+1, plus the cited links' text/content)",
                          paths_mean=sum(paths_returned) / len(paths_returned),
                          truncated_fraction=sum(truncated) / len(truncated))
            results.append(result)
        return results

    # -- where the time goes --------------------------------------------------------------------

    def measure_stages(self) -> dict:
        """Per-stage time of every mode, of the 2- and 4-source searches and of the two search
        views, one pass over the queries (with stage wrappers, so totals run slightly above the
        unwrapped figures). Combined searches (several sources) sum stage times over their threads."""
        timer = StageTimer(self.cache)
        out = {}
        specs = [(mode, False, lambda q, i, m=mode: self.call_search(mode_body(m, q, i), timer)) for mode in MODES]
        specs += [(f"{count} sources (RRF)", True, lambda q, i, c=count: self.call_search(multi_body(c, q), timer))
                  for count in (2, 4)]
        specs += [(f"view {name}", True, lambda q, i, n=name, b=body: self.call_view(n, b(q), timer))
                  for name, body in (("events_and_facts", events_view_body), ("bm25_and_vector", fused_view_body))]
        from django.db import connection

        statements = []

        def count(execute, sql, params, many, ctx):
            statements.append(sql)
            return execute(sql, params, many, ctx)

        for label, combined, run in specs:
            totals, cpu_totals, per_stage, per_stage_cpu, counts = [], [], {}, {}, []
            with connection.execute_wrapper(count):
                for index, query in enumerate(self.queries):
                    timer.take()
                    statements.clear()
                    started, cpu_started = time.perf_counter(), time.process_time()
                    run(query, index)
                    totals.append(time.perf_counter() - started)
                    cpu_totals.append(time.process_time() - cpu_started)
                    counts.append(len(statements))
                    wall, cpu = timer.take()
                    for stage, seconds in wall.items():
                        per_stage.setdefault(stage, []).append(seconds)
                        per_stage_cpu.setdefault(stage, []).append(cpu.get(stage, 0.0))
            n = len(totals)
            stages = {}
            for stage, _trace_stage, nested in STAGES:
                values = per_stage.get(stage, [])
                if values:
                    stages[stage] = {"mean_ms": 1000 * sum(values) / n,
                                     "cpu_mean_ms": 1000 * sum(per_stage_cpu[stage]) / n,
                                     "nested_in": nested}
            top = sum(v["mean_ms"] for v in stages.values() if v["nested_in"] is None)
            top_cpu = sum(v["cpu_mean_ms"] for v in stages.values() if v["nested_in"] is None)
            mean_total, mean_cpu = 1000 * sum(totals) / n, 1000 * sum(cpu_totals) / n
            if not combined:  # combined searches sum stage times over their threads
                stages["other (unattributed)"] = {"mean_ms": mean_total - top, "cpu_mean_ms": mean_cpu - top_cpu,
                                                  "nested_in": None}
            out[label] = {"total_mean_ms": mean_total, "total_p50_ms": 1000 * percentile(totals, 50),
                          "process_cpu_mean_ms": mean_cpu, "stages": stages,
                          "sql_statements_per_request": None if combined else sum(counts) / n,
                          "note": "stage times summed over the source threads" if combined else None}
        return out

    def measure_touch(self) -> dict:
        """The eager touch-on-read UPDATE (k ids) that runs in-process without a broker."""
        from catalog_app.services.record_touch import records_touch

        times = []
        for query in self.queries[:20]:
            payload = self.call_search(mode_body("hybrid", query, 0))
            ids = [hit["id"] for hit in payload["hits"]]
            started = time.perf_counter()
            records_touch(record_ids=ids)
            times.append(time.perf_counter() - started)
        return {"label": f"records_touch on the {K} returned ids (eager touch_records)", **latency_summary(times)}

    def explain(self) -> dict:
        """EXPLAIN (ANALYZE, BUFFERS) of the vector candidate query and of the text channel's
        baseline (the exact scan the lexical index replaces)."""
        import psycopg

        out = {}
        query = self.queries[0]
        for mode in ("vector", "text"):
            self.capture.q = query["q"]
            self.call_search(mode_body(mode, query, 0), self.capture)
            call = self.capture.take()[0]
            cursor = psycopg.ClientCursor(self.conn)
            lines = []
            with self.conn.transaction():
                statements = call["statements"]
                if statements[0][0].lstrip().startswith("SELECT set_config"):
                    cursor.execute(*statements[0])
                    cursor.fetchall()
                    statements = statements[1:]
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + statements[0][0], statements[0][1])
                lines = [row[0] for row in cursor.fetchall()]
            plan = "\n".join(lines)
            out[mode] = {"query": query["q"], "plan": lines,
                         "uses_hnsw_index": "record_embedding_hnsw_" in plan if mode == "vector" else None,
                         "text_scan": True if mode == "text" else None}
        return out

    def profile_hybrid(self) -> dict:
        profiler = cProfile.Profile()
        bodies = [mode_body("hybrid", query, index) for index, query in enumerate(self.queries)]
        profiler.enable()
        for body in bodies:
            self.call_search(body)
        profiler.disable()
        out = {}
        for sort in ("tottime", "cumulative"):
            stream = io.StringIO()
            pstats.Stats(profiler, stream=stream).strip_dirs().sort_stats(sort).print_stats(25)
            out[sort] = stream.getvalue().splitlines()
        return out

    def close(self) -> None:
        self.conn.close()


# ---------------------------------------------------------------------------------------------
# Throughput and memory through gunicorn


def torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def _rss_of(pid: int) -> int:
    import psutil

    return psutil.Process(pid).memory_info().rss


def bare_django_rss() -> int:
    code = ("import django\n"
            "for line in open('/proc/self/status'):\n"
            "    if line.startswith('VmRSS:'): print(int(line.split()[1]) * 1024)")
    return int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def drive(server, requests: list[tuple[str, str, bytes | None]], key: str, clients: int, seconds: float) -> dict:
    """``clients`` threads sending ``requests`` round-robin for ``seconds``."""
    stop_at = time.perf_counter() + seconds
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    def client(offset: int):
        index = offset
        mine, bad = [], []
        while time.perf_counter() < stop_at:
            method, path, body = requests[index % len(requests)]
            index += clients
            started = time.perf_counter()
            try:
                status, data = server.request(method, path, body, key, timeout=120)
            except OSError as error:
                bad.append(repr(error))
                continue
            if status != 200:
                bad.append(f"{status}: {data[:200]!r}")
                continue
            mine.append(time.perf_counter() - started)
        with lock:
            latencies.extend(mine)
            errors.extend(bad)

    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    return {"clients": clients, "seconds": elapsed, "requests": len(latencies), "errors": len(errors),
            "error_samples": errors[:3],
            "requests_per_s": len(latencies) / elapsed, "latency": latency_summary(latencies)}


def measure_server(args, bench: Bench) -> dict:
    from django.conf import settings

    # The query-vector cache off: the 50 query texts repeat, and every request should pay for its
    # embedding as a stream of distinct queries would.
    env = {"DATABASE_URL": database_url(settings.DATABASES["default"]), "TOUCH_ON_READ": "false",
           "QUERY_EMBEDDING_CACHE": "0", "DJANGO_SETTINGS_MODULE": "memseek_site.settings"}
    workers = args.workers
    log(f"{bench.size}: starting gunicorn with {workers} sync workers")
    server = Server(workers=workers, env=env)
    try:
        health = [("GET", "/health", None)]
        searches = [("POST", "/search", json.dumps(mode_body("hybrid", query, i)).encode())
                    for i, query in enumerate(bench.queries)]
        drive(server, health, bench.key, 2, 1.0)
        rss_before = {pid: _rss_of(pid) for pid in server.worker_pids()}
        # Warm every worker (model load, catalog, connections): concurrent searches until each has served some.
        drive(server, searches, bench.key, 2 * workers, args.warmup_seconds or max(10.0, 4.0 * workers))
        rss_after = {pid: _rss_of(pid) for pid in server.worker_pids()}
        rounds = []
        for clients in args.clients:
            row = {"clients": clients}
            for label, requests in (("health", health), ("search", searches)):
                log(f"{bench.size}: {label} with {clients} client(s) for {args.throughput_seconds}s")
                row[label] = drive(server, requests, bench.key, clients, args.throughput_seconds)
            row["ratio_rps"] = row["search"]["requests_per_s"] / row["health"]["requests_per_s"]
            rounds.append(row)
        rss_end = {pid: _rss_of(pid) for pid in server.worker_pids()}
    finally:
        server.stop()
    one_thread = []
    if "one-thread" not in args.skip:
        # The same search rounds with torch limited to one intra-op thread per worker (OMP_NUM_THREADS=1).
        log(f"{bench.size}: gunicorn again with OMP_NUM_THREADS=1")
        server = Server(workers=workers, env={**env, "OMP_NUM_THREADS": "1"})
        try:
            drive(server, searches, bench.key, 2 * workers, args.warmup_seconds or max(10.0, 4.0 * workers))
            for clients in args.clients:
                log(f"{bench.size}: search (OMP_NUM_THREADS=1) with {clients} client(s) for {args.throughput_seconds}s")
                row = {"clients": clients,
                       "search": drive(server, searches, bench.key, clients, args.throughput_seconds)}
                health = next(r["health"] for r in rounds if r["clients"] == clients)
                row["ratio_rps"] = row["search"]["requests_per_s"] / health["requests_per_s"]
                one_thread.append(row)
        finally:
            server.stop()
    bare = bare_django_rss()
    return {
        "server": f"gunicorn {setup.gunicorn_version()}, {workers} sync workers, 127.0.0.1, a new connection per "
                  "request (sync workers close each), client threads in the benchmark process",
        "workers": workers, "request": "POST /search hybrid, k=20, include+render as GET /search; the server embeds "
                                       "each query itself (MiniLM, in-process; QUERY_EMBEDDING_CACHE 0)",
        "rounds": rounds,
        "rounds_omp_one_thread": one_thread,
        "memory": {"worker_rss_mib_after_health": {str(p): v / 2**20 for p, v in rss_before.items()},
                   "worker_rss_mib_model_loaded": {str(p): v / 2**20 for p, v in rss_after.items()},
                   "worker_rss_mib_end": {str(p): v / 2**20 for p, v in rss_end.items()},
                   "bare_django_rss_mib": bare / 2**20,
                   "ratio": max(rss_end.values()) / bare if rss_end else None},
    }


# ---------------------------------------------------------------------------------------------
# One size


def run_size(args, size: int) -> dict:
    database = f"{args.database_prefix}_{size}"
    with setup.bench_database(database, drop=args.drop, cache=args.cache):
        return _run_size(args, size, database)


def _run_size(args, size: int, database: str) -> dict:
    from django.conf import settings

    started = time.perf_counter()
    corpus = setup.build_corpus(size, database=database, rebuild=args.rebuild, seed=args.seed, cache=args.cache)
    bench = Bench(args, size, corpus)
    previous = dict(getattr(settings, "MEMSEEK", {}) or {})
    settings.MEMSEEK = {**previous, "TOUCH_ON_READ": False}
    out: dict = {"size": size, "build": corpus["build"], "queries": len(bench.queries),
                 "iterations": args.iterations, "query_samples": [q["q"] for q in bench.queries[:8]]}
    try:
        log(f"{size}: query embedding")
        out["embedding"], vectors = bench.measure_embedding()
        if torch_threads() > 1:
            out["embedding_one_thread"], _ = bench.measure_embedding(threads=1)
        bench.cache.vectors = vectors
        # The corpus items this process holds (a server holds none) and everything loaded so far
        # leave the garbage collector, as the WSGI worker freezes its modules at startup: else
        # every full collection during a timed call walks 100,000 record dicts again.
        gc.collect()
        gc.freeze()
        out["searches"] = bench.measure_modes()
        hybrid = out["searches"][0]
        out["multi"] = bench.measure_multi(hybrid)
        out["graph"] = bench.measure_graph()
        log(f"{size}: stage breakdown, EXPLAIN, touch cost")
        out["stages"] = bench.measure_stages()
        out["explain"] = bench.explain()
        out["touch_on_read_eager"] = bench.measure_touch()
        ratio, p50 = hybrid["ratio_p50"], hybrid["service_warm"]["p50_ms"]
        if args.profile or ratio > HYBRID_RATIO_TARGET or p50 > HYBRID_P50_TARGET_MS:
            log(f"{size}: profiling hybrid (cProfile)")
            out["profile_hybrid"] = bench.profile_hybrid()
        out["vector_cache_misses"] = bench.cache.misses
        if "throughput" not in args.skip:
            out["throughput"] = measure_server(args, bench)
    finally:
        gc.unfreeze()
        settings.MEMSEEK = previous
        bench.close()
    out["targets"] = targets(out)
    out["seconds"] = time.perf_counter() - started
    return out


def targets(out: dict) -> list[dict]:
    hybrid = next(s for s in out["searches"] if s["name"] == "hybrid")
    applies = out["size"] == TARGET_SIZE
    return [
        {"target": f"hybrid p50 ≤ {HYBRID_RATIO_TARGET}× its raw SQL", "value": hybrid["ratio_p50"],
         "met": hybrid["ratio_p50"] <= HYBRID_RATIO_TARGET, "binding": applies},
        {"target": f"hybrid p50 ≤ {HYBRID_P50_TARGET_MS:.0f} ms (warm)", "value": hybrid["service_warm"]["p50_ms"],
         "met": hybrid["service_warm"]["p50_ms"] <= HYBRID_P50_TARGET_MS, "binding": applies},
        *({"target": f"fused BM25 + vector view p50 ≤ {FUSED_P50_TARGET_MS:.0f} ms (warm)",
           "value": view["service_warm"]["p50_ms"],
           "met": view["service_warm"]["p50_ms"] <= FUSED_P50_TARGET_MS, "binding": applies}
          for view in out.get("multi", []) if view["name"] == FUSED_VIEW),
    ]


# ---------------------------------------------------------------------------------------------
# Report


def _ms(value: float) -> str:
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def findings(out: dict) -> list[str]:
    """Numbers the report's reader needs to see where the gaps to the baselines come from."""
    notes = []
    by_name = {row["name"]: row for row in out["searches"] + out["multi"] + out["graph"]}
    hybrid, stages = by_name["hybrid"], out["stages"]["hybrid"]
    gap = hybrid["service"]["p50_ms"] - hybrid["baseline"]["p50_ms"]
    parts = {name: stages["stages"].get(name, {}).get("mean_ms", 0.0) for name in (
        "reload SQL", "present (hits, render)", "rank (expression)", "rank (order)", "recheck", "resolve")}
    notes.append(
        f"Hybrid: the service's p50 is {_ms(gap)} ms above its raw candidate SQL. Beyond the candidate queries (on "
        f"the engine's threads) it runs {stages['sql_statements_per_request']:.0f} statement(s) on the request's "
        f"own connection (the canonical reload of those of the {hybrid.get('candidates_mean', 0):.0f} candidates "
        f"the channels did not reload as they answered: {_ms(parts['reload SQL'])} ms wall), presents and renders "
        f"the {K} hits ({_ms(parts['present (hits, render)'])} ms), ranks "
        f"({_ms(parts['rank (expression)'] + parts['rank (order)'])} ms), "
        f"rechecks ({_ms(parts['recheck'])} ms) "
        f"and resolves the spec ({_ms(parts['resolve'])} ms). This process spent "
        f"{_ms(stages['process_cpu_mean_ms'])} ms of CPU per hybrid request; the rest of the "
        f"{_ms(stages['total_mean_ms'])} ms is PostgreSQL, the socket and waiting for a CPU.")
    for label in ("2 sources (RRF)", "4 sources (RRF)"):
        connect = out["stages"][label]["stages"].get("DB connect")
        row = by_name[label]
        if connect and connect["mean_ms"] >= 0.5:
            notes.append(
                f"{label}: {_ms(connect['mean_ms'])} ms of database connection setup per request (summed over the "
                f"source threads; the pool's threads keep their connections, so this is reconnects after "
                f"CONN_MAX_AGE), against a service-minus-baseline gap of "
                f"{_ms(row['service']['p50_ms'] - row['baseline']['p50_ms'])} ms at p50.")
    view = by_name.get("view events_and_facts (2 sources)")
    if view:
        notes.append(f"The two-source view runs two entity-scoped sources whose SQL is cheap "
                     f"({_ms(view['baseline']['p50_ms'])} ms p50 for both), so the fixed per-source costs above "
                     f"dominate its ratio ({view['ratio_p50']:.2f}).")
    graph4 = by_name.get("graph depth 4")
    if graph4:
        notes.append(f"Graph depth 4: the walk issues one link query per level (4 round trips, each reading the "
                     f"role fields out of every live link of the edge collection through JSON expressions) and "
                     f"builds paths in Python; the recursive CTE does it in one statement: "
                     f"{_ms(graph4['service']['p50_ms'])} vs {_ms(graph4['baseline']['p50_ms'])} ms p50.")
    emb, one = out["embedding"], out.get("embedding_one_thread")
    if one:
        notes.append(f"Query embedding is sensitive to torch's intra-op threads on a busy machine: p50 "
                     f"{_ms(emb['service']['p50_ms'])} ms with {emb['torch_threads']} threads, "
                     f"{_ms(one['service']['p50_ms'])} ms with 1.")
    throughput = out.get("throughput")
    if throughput and throughput.get("rounds_omp_one_thread"):
        best = max(r["search"]["requests_per_s"] for r in throughput["rounds"])
        best_one = max(r["search"]["requests_per_s"] for r in throughput["rounds_omp_one_thread"])
        notes.append(f"Through gunicorn the server embeds every query itself, so search throughput follows the "
                     f"embedding cost: at most {best:.1f} req/s with torch's default threads, {best_one:.1f} req/s "
                     f"with OMP_NUM_THREADS=1 in the workers.")
    plan = out["explain"]["vector"]
    notes.append("The vector candidate query " + ("uses" if plan["uses_hnsw_index"] else "does NOT use") +
                 " the space's HNSW index (plan below)" + ("" if plan["uses_hnsw_index"] else
                 "; at this size the planner prefers an exact scan") + ".")
    return notes


def markdown_report(results: dict) -> str:
    lines = ["# Search benchmark (`bench/search.py`)", "",
             f"Run {results['started_at']}, {results['seconds'] / 60:.1f} min. Server-side latency: in-process around "
             "the service call (`search_run` / `view_query`) for a parsed JSON body, no HTTP, query embedding "
             f"excluded (pre-computed; reported separately); k={K}, `include` {INCLUDE} and `render: true` as "
             "`GET /search` sends them; touch-on-read off. Every baseline ran in the same process, interleaved "
             "query by query with the service calls (service p50/p95/p99); the warm columns are the same "
             "passes of the service alone right after, no baseline between samples (the absolute targets' figures: a "
             "lexical baseline is an exact scan of the corpus that evicts the index's pages before every interleaved "
             "sample).", ""]
    for size_key, out in results["sizes"].items():
        lines += _report_size(int(size_key), out)
    return "\n".join(lines + _report_method(results["environment"]))


def _report_size(size: int, out: dict) -> list[str]:
    """The report's section of one corpus size."""
    build = out["build"]
    lines = [f"## {size:,} records", ""]
    if build.get("reused"):
        lines.append(f"Corpus reused from database `{build.get('database')}` (built {build.get('built_at')} "
                     f"in {build.get('build_seconds', 0):.0f} s).")
    else:
        embeddings = build["embeddings"]
        computed = "from cache" if embeddings["hit"] else f"computed in {embeddings['seconds']:.0f} s"
        lines.append(f"Corpus built in {build['build_seconds']:.0f} s (embeddings {computed}"
                     f", ingest {build['ingest_seconds']:.0f} s, COPY {build['copy_seconds']:.0f} s, HNSW index "
                     f"{build['index_seconds']:.0f} s, VACUUM ANALYZE {build['vacuum_analyze_seconds']:.0f} s).")
    lines += [f"{out['queries']} queries × {out['iterations']} iterations per measure "
              f"(samples: {', '.join(repr(q) for q in out['query_samples'][:4])}, ...).", ""]
    lines += ["| search | service p50 | p95 | p99 | warm p50 | warm p95 | baseline | baseline p50 | p95 | "
              "ratio p50 | ratio p95 | baseline agrees |",
              "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---|"]
    for row in out["searches"] + out["multi"] + out["graph"]:
        s, b = row["service"], row["baseline"]
        name = row["name"] + (f" (mean {row['paths_mean']:.0f} paths, {100 * row['truncated_fraction']:.0f}% "
                              f"truncated at {row['limit']})" if row["kind"] == "graph" else "")
        w = row["service_warm"]
        lines.append(f"| {name} | {_ms(s['p50_ms'])} | {_ms(s['p95_ms'])} | {_ms(s['p99_ms'])} | "
                     f"{_ms(w['p50_ms'])} | {_ms(w['p95_ms'])} | {row['baseline_label']} | "
                     f"{_ms(b['p50_ms'])} | {_ms(b['p95_ms'])} | {row['ratio_p50']:.2f} | "
                     f"{row['ratio_p95']:.2f} | {row.get('baseline_agrees', '—')} |")
    lines.append("")
    lines.append("Combined searches beside the single hybrid search "
                 "(service p50 / single hybrid p50): " + ", ".join(
        f"{row['name']} {row['ratio_to_single_hybrid_p50']:.2f}×" for row in out["multi"]) + ".")
    emb = out["embedding"]
    lines += ["", f"Query embedding (excluded above): `embed_query` p50 {_ms(emb['service']['p50_ms'])} ms, p95 "
              f"{_ms(emb['service']['p95_ms'])} ms; raw `SentenceTransformer.encode` p50 "
              f"{_ms(emb['baseline']['p50_ms'])} ms, p95 {_ms(emb['baseline']['p95_ms'])} ms; ratio p50 "
              f"{emb['ratio_p50']:.2f}.",
              *([f"With torch limited to 1 intra-op thread: `embed_query` p50 "
                 f"{_ms(out['embedding_one_thread']['service']['p50_ms'])} ms, p95 "
                 f"{_ms(out['embedding_one_thread']['service']['p95_ms'])} ms; raw encode p50 "
                 f"{_ms(out['embedding_one_thread']['baseline']['p50_ms'])} ms (default: "
                 f"{out['embedding']['torch_threads']} threads)."] if "embedding_one_thread" in out else []),
              f"Eager touch-on-read (without a broker, runs in the request): p50 "
              f"{_ms(out['touch_on_read_eager']['p50_ms'])} ms per search.", ""]
    lines += ["Targets" + ("" if size == TARGET_SIZE
                           else f" (set for {TARGET_SIZE:,} records; shown for reference)")
              + ":", ""]
    for target in out["targets"]:
        lines.append(f"- {target['target']}: {target['value']:.2f} — {'met' if target['met'] else '**missed**'}")
    lines += ["", "Findings:", "", *[f"- {finding}" for finding in findings(out)]]
    lines += ["", "Where the time goes: mean wall ms per request, in parentheses the CPU ms this process spent "
              "(the rest of the wall time is PostgreSQL, the network and waiting for a CPU); one instrumented "
              "pass. Combined searches sum their source threads' stage times.", "",
              "| stage | " + " | ".join(out["stages"]) + " |", "|---|" + "---:|" * len(out["stages"])]
    stage_names = [s[0] for s in STAGES] + ["other (unattributed)"]
    for stage in stage_names:
        cells = [out["stages"][label]["stages"].get(stage) for label in out["stages"]]
        if all(c is None or abs(c["mean_ms"]) < 0.005 for c in cells):
            continue
        lines.append(f"| {stage} | " + " | ".join(
            "—" if c is None else f"{_ms(c['mean_ms'])} ({_ms(c['cpu_mean_ms'])})" for c in cells) + " |")
    lines.append("| **total** | " + " | ".join(f"{_ms(v['total_mean_ms'])} ({_ms(v['process_cpu_mean_ms'])})"
                                              for v in out["stages"].values()) + " |")
    lines.append("| SQL statements per request (baseline: the channel queries) | " + " | ".join(
        "—" if v["sql_statements_per_request"] is None else f"{v['sql_statements_per_request']:.0f}"
        for v in out["stages"].values()) + " |")
    vector_plan = out["explain"]["vector"]
    lines += ["", f"Vector candidate query uses the HNSW index: "
                  f"**{'yes' if vector_plan['uses_hnsw_index'] else 'NO'}**"
              f" (EXPLAIN ANALYZE, query {vector_plan['query']!r}):", "", "```",
              *vector_plan["plan"], "```", "",
              "Text channel baseline plan (the exact scan the lexical index replaces):", "", "```",
              *out["explain"]["text"]["plan"],
              "```", ""]
    if out.get("throughput"):
        lines += _report_throughput(out["throughput"])
    return lines


def _report_throughput(throughput: dict) -> list[str]:
    """The throughput table through gunicorn and the workers' resident memory."""
    lines = [f"Throughput: {throughput['server']}; {throughput['request']}.", "",
             "| clients | search req/s | search p50 ms | search p95 ms | health req/s | health p50 ms | "
             "ratio (search/health) | errors |", "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in throughput["rounds"]:
        s, h = row["search"], row["health"]
        lines.append(f"| {row['clients']} | {s['requests_per_s']:.1f} | {_ms(s['latency']['p50_ms'])} | "
                     f"{_ms(s['latency']['p95_ms'])} | {h['requests_per_s']:.0f} | "
                     f"{_ms(h['latency']['p50_ms'])} "
                     f"| {row['ratio_rps']:.3f} | {s['errors'] + h['errors']} |")
    for row in throughput.get("rounds_omp_one_thread", []):
        s = row["search"]
        lines.append(f"| {row['clients']} (OMP_NUM_THREADS=1) | {s['requests_per_s']:.1f} | "
                     f"{_ms(s['latency']['p50_ms'])} | {_ms(s['latency']['p95_ms'])} | (as above) | | "
                     f"{row['ratio_rps']:.3f} | {s['errors']} |")
    memory = throughput["memory"]
    lines += ["", f"Resident memory per gunicorn worker: "
                  f"{', '.join(f'{v:.0f}' for v in memory['worker_rss_mib_after_health'].values())} "
                  f"MiB after /health only; "
              f"{', '.join(f'{v:.0f}' for v in memory['worker_rss_mib_model_loaded'].values())} MiB with the "
              f"model loaded; {', '.join(f'{v:.0f}' for v in memory['worker_rss_mib_end'].values())} MiB at "
              f"the end; baseline `python -c \"import django\"` {memory['bare_django_rss_mib']:.0f} MiB "
              f"(ratio {memory['ratio']:.1f}).", ""]
    return lines


def _report_method(env: dict) -> list[str]:
    machine, versions, git = env["machine"], env["versions"], env["git"]
    return ["## Method and caveats", "",
            "- Corpus: `bench/corpus.py` `make_records(size, seed)` into a `main` collection without required "
            f"processors, plus `deps` links: {setup.GRAPH_NODES:,} services "
            f"(as many as records in a smaller corpus), "
            f"{setup.GRAPH_OUT_DEGREE} outgoing links each. Built once per size "
            "into its own database by a shortcut: records through the ingest service (`record_ingest_batch`, "
            "batches of 100), then their real MiniLM vectors (computed once with the service's `embed_texts`, "
            "cached in `bench/.cache/`) COPYed into `catalog_app_recordembedding`, the space's HNSW index built, "
            "VACUUM ANALYZE. The ingest path itself is measured by `bench/ingest.py`.",
            "- Graph: 3 links per node (not more) because `MAX_GRAPH_PATHS` (100) caps a walk: at 5 links per "
            "node a depth-3 walk is already truncated inside level 3, so depth 4 would never be queried.",
            "- Baselines replay the statements the backend issued for the same request (captured text and "
            "parameters) on a plain psycopg connection; their ids are compared to the service's candidates "
            "('baseline agrees'). The service additionally reloads the candidates canonically, rechecks, ranks, "
            "fuses, renders and serialises: that is what the ratio prices.",
            f"- Machine: {machine['cores']} cores ({machine['cpu']}), {machine['memory_gib']} GiB; load average at "
            f"start {machine['load_average_at_start']} — this machine was shared with other work while the "
            "benchmark ran, so absolute figures are noisy; ratios are more stable (interleaved).",
            f"- Versions: Python {versions['python']}, Django {versions['django']}, PostgreSQL "
            f"{versions['postgres_server']} (shared_buffers {env['postgres_settings']['shared_buffers']}, work_mem "
            f"{env['postgres_settings']['work_mem']}, jit {env['postgres_settings']['jit']}), pgvector "
            f"{versions['pgvector']}, psycopg {versions['psycopg']}, gunicorn {versions['gunicorn']}, torch "
            f"{versions['torch']}, sentence-transformers {versions['sentence_transformers']}.",
            f"- Commit {git['commit']} ({git['branch']})" + (
                f", working tree dirty ({len(git['modified_tracked_files'])} modified tracked files)."
                if git["dirty"] else "."), ""]


def plot(results: dict, path: Path) -> None:
    sizes = list(results["sizes"])
    with harness.figure(path, 2, 2, figsize=(15, 10)) as (_, axes):
        _plot_searches(axes[0][0], results, sizes)
        _plot_graph(axes[0][1], results, sizes)
        _plot_throughput(axes[1][0], results, sizes)
        _plot_stages(axes[1][1], results, sizes)


def _plot_searches(ax, results: dict, sizes: list[str]) -> None:
    """Single searches, multi-source and the view: service beside baseline p50."""
    width = 0.8 / (2 * len(sizes))
    for si, size in enumerate(sizes):
        rows = results["sizes"][size]["searches"] + results["sizes"][size]["multi"]
        names = [r["name"].replace(" (RRF)", "").replace("view events_and_facts (2 sources)", "view (2 src)")
                 for r in rows]
        x = list(range(len(rows)))
        ax.bar([i + (2 * si) * width for i in x], [r["service"]["p50_ms"] for r in rows], width,
               label=f"service {int(size):,}")
        ax.bar([i + (2 * si + 1) * width for i in x], [r["baseline"]["p50_ms"] for r in rows], width,
               label=f"raw SQL {int(size):,}", alpha=0.6)
        ax.set_xticks([i + width * (len(sizes) - 0.5) for i in x], names, rotation=20)
    ax.axhline(HYBRID_P50_TARGET_MS, color="red", linestyle=":", linewidth=1, label="30 ms target (hybrid)")
    ax.set_ylabel("p50 ms (server-side)")
    ax.set_title("Searches: service vs raw candidate SQL (p50)")
    ax.legend(fontsize=8)


def _plot_graph(ax, results: dict, sizes: list[str]) -> None:
    for size in sizes:
        rows = results["sizes"][size]["graph"]
        ax.plot([r["depth"] for r in rows], [r["service"]["p50_ms"] for r in rows], marker="o",
                label=f"graph view {int(size):,}")
        ax.plot([r["depth"] for r in rows], [r["baseline"]["p50_ms"] for r in rows], marker="x", linestyle="--",
                label=f"recursive CTE {int(size):,}")
    ax.set_xlabel("depth")
    ax.set_ylabel("p50 ms")
    ax.set_xticks(list(GRAPH_DEPTHS))
    ax.set_title(f"Graph views (limit {GRAPH_LIMIT}) vs recursive CTE")
    ax.legend(fontsize=8)


def _plot_throughput(ax, results: dict, sizes: list[str]) -> None:
    for size in sizes:
        throughput = results["sizes"][size].get("throughput")
        if not throughput:
            continue
        clients = [r["clients"] for r in throughput["rounds"]]
        ax.plot(clients, [r["search"]["requests_per_s"] for r in throughput["rounds"]], marker="o",
                label=f"POST /search hybrid {int(size):,}")
        ax.plot(clients, [r["health"]["requests_per_s"] for r in throughput["rounds"]], marker="x", linestyle="--",
                label=f"GET /health {int(size):,}")
        if throughput.get("rounds_omp_one_thread"):
            rounds = throughput["rounds_omp_one_thread"]
            ax.plot([r["clients"] for r in rounds], [r["search"]["requests_per_s"] for r in rounds], marker="s",
                    linestyle=":", label=f"POST /search, OMP_NUM_THREADS=1 {int(size):,}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("concurrent clients")
    ax.set_ylabel("requests/s")
    ax.set_title("Throughput through gunicorn")
    ax.legend(fontsize=8)


def _plot_stages(ax, results: dict, sizes: list[str]) -> None:
    """The stage breakdown of the single searches, stacked."""
    import matplotlib

    stage_names = [s[0] for s in STAGES if s[2] is None] + ["other (unattributed)"]
    colors = matplotlib.colormaps["tab20"].colors
    labels = []
    bottoms = []
    for size in sizes:
        for mode in MODES:
            labels.append(f"{mode}\n{int(size):,}")
            bottoms.append(results["sizes"][size]["stages"][mode]["stages"])
    base = [0.0] * len(labels)
    for index, stage in enumerate(stage_names):
        values = [max(0.0, b.get(stage, {}).get("mean_ms", 0.0)) for b in bottoms]
        if not any(v > 0.05 for v in values):
            continue
        ax.bar(labels, values, bottom=base, label=stage, color=colors[index % len(colors)])
        base = [a + b for a, b in zip(base, values)]
    ax.tick_params(axis="x", labelsize=8)
    ax.set_ylabel("mean ms per request")
    ax.set_title("Where the time goes (single searches, wall ms)")
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))


# ---------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, action="append", help="corpus size (repeatable; default 10000)")
    harness.add_out_argument(parser)
    parser.add_argument("--rebuild", action="store_true", help="drop and rebuild the corpus database(s)")
    parser.add_argument("--iterations", type=int, default=5, help="timed passes over the queries (default 5)")
    parser.add_argument("--queries", type=int, default=50, help="query texts (default 50, at least 5)")
    parser.add_argument("--embedding-passes", type=int, default=1,
                        help="passes over the queries for the query-embedding measure (default 1)")
    parser.add_argument("--clients", type=lambda s: [int(x) for x in s.split(",")], default=[1, 4, 16],
                        help="client concurrency levels for throughput (default 1,4,16)")
    parser.add_argument("--throughput-seconds", type=float, default=10.0)
    parser.add_argument("--warmup-seconds", type=float, default=None,
                        help="untimed concurrent searches warming each server's workers before the throughput rounds "
                             "(default: 4 per worker, at least 10)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2,
                        help="gunicorn sync workers (default: cores)")
    parser.add_argument("--database-prefix", default="memseek_bench",
                        help="corpus databases are PREFIX_<size> on the configured server (default memseek_bench)")
    harness.add_seed_argument(parser, setup.SEED)
    parser.add_argument("--cache", type=Path, default=setup.CACHE,
                        help="directory of the cached vectors and build info (default bench/.cache)")
    parser.add_argument("--drop", action="store_true",
                        help="drop the corpus database(s) and their build info at the end (a throwaway run)")
    parser.add_argument("--skip", type=lambda s: set(s.split(",")), default=set(),
                        help="comma list of measures to skip: throughput, one-thread (the OMP_NUM_THREADS=1 rerun)")
    parser.add_argument("--profile", action="store_true", help="always add a cProfile of the hybrid searches")
    args = parser.parse_args(argv)
    args.size = args.size or [10_000]
    if args.queries < 5 or args.iterations < 1 or any(s < MIN_SIZE for s in args.size):
        parser.error(f"--queries must be at least 5, --iterations at least 1, sizes at least {MIN_SIZE}")

    setup.django_setup()
    started = time.perf_counter()
    results = {"started_at": harness.now(),
               "environment": setup.environment(),
               "parameters": {"sizes": args.size, "iterations": args.iterations, "queries": args.queries,
                              "k": K, "clients": args.clients, "throughput_seconds": args.throughput_seconds,
                              "workers": args.workers, "seed": args.seed, "graph_limit": GRAPH_LIMIT,
                              "include": INCLUDE, "render": True, "touch_on_read": False},
               "sizes": {}}
    for size in args.size:
        results["sizes"][str(size)] = run_size(args, size)
    results["seconds"] = time.perf_counter() - started
    harness.publish(results, out=args.out, name="search", report=markdown_report, plot=plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
