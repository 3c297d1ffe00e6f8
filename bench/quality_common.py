"""Shared machinery of the retrieval-quality harnesses (``bench/scifact.py``, ``bench/locomo.py``).

Everything a harness measures goes through the public HTTP API of the service: a real
``gunicorn memseek_site.wsgi`` (``bench/processes.py``) started for the run with as many sync
workers as the harness has clients (``--workers``, default 2), each worker limited to one torch
thread so the workers share the two cores, on the database this process uses (under pytest, the
test database). ``POST /records``, ``POST /search`` and ``POST /views/{name}/query`` go over
HTTP from client threads here, which only serialise JSON, so the service's Python work runs in
separate processes and not under this process's GIL. Without ``CELERY_BROKER_URL`` enrichment
(the bundled MiniLM embedding) runs inside each ``POST /records`` right after its commit; with a
broker the harness waits for the workers.

What lives here: Django setup, the run environment (machine, versions, git commit), a fresh
workspace per run (deleted afterwards unless ``--keep``) served by its gunicorn, batched ingest
with a progress bar, waiting until every record is ready, timed queries, metrics through
``ir_measures`` (nothing here reimplements nDCG, recall or reciprocal rank), the stored
embeddings for the brute-force baseline, and writing ``NAME.json`` / ``NAME.md``.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import re
import statistics
import sys
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memseek_site.settings")

import django  # noqa: E402

django.setup()

import matplotlib  # noqa: E402

matplotlib.use("Agg")
logging.getLogger("bm25s").setLevel(logging.WARNING)  # it logs every index build

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from tqdm import tqdm  # noqa: E402

from bench import harness  # noqa: E402
from bench.harness import RESULTS, log, write_json  # noqa: E402, F401 (write_json: the quality benches')
from bench.processes import Server, database_url  # noqa: E402

BATCH = 100  # records per POST /records (MAX_BATCH)
NO_RESULT = "__no_result__"  # placeholder doc id so a query with no hits still counts (as 0)


class BenchError(RuntimeError):
    pass


def progress(iterable=None, **kwargs):
    """A tqdm bar on stderr; quiet when BENCH_PROGRESS=0 (the smoke test)."""
    kwargs.setdefault("file", sys.stderr)
    kwargs.setdefault("dynamic_ncols", True)
    kwargs.setdefault("mininterval", 1.0)
    kwargs.setdefault("disable", os.environ.get("BENCH_PROGRESS", "1") == "0")
    return tqdm(iterable, **kwargs)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


# --------------------------------------------------------------------------------------------
# Environment


def environment() -> dict:
    """The harness's run record, plus pgvector and the quality libraries' versions, and how the
    service under test runs."""
    env = harness.environment({"sentence_transformers": "sentence-transformers", "ir_measures": "ir-measures",
                               "bm25s": "bm25s", "pystemmer": "PyStemmer", "numpy": "numpy"})
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
    env["versions"]["pgvector"] = row[0] if row else None
    env["database"] = (("DATABASE_URL" if os.environ.get("DATABASE_URL", "").strip() else "embedded PostgreSQL")
                       + f" (database {settings.DATABASES['default']['NAME']})")
    env["enrichment"] = ("celery broker" if settings.CELERY_BROKER_URL
                         else "inside each POST /records after its commit (no broker)")
    env["api"] = ("gunicorn memseek_site.wsgi on 127.0.0.1 (sync workers, one torch thread each), "
                  "client threads in the harness process (http.client)")
    return env


def set_torch_threads(threads: int) -> None:
    """Set this process's torch intra-op pool (it embeds the brute-force baseline's queries one
    at a time). One query gains nothing from a second thread on a 2-core machine shared with
    PostgreSQL and loses a lot when the machine is busy: one query embedding measured 472 ms
    with 2 threads and 93 ms with 1 at load average 8."""
    import torch

    torch.set_num_threads(threads)


def begin_run() -> tuple[float, str, dict]:
    """What every quality bench does first: its clock, its start time, one torch thread for this
    process (it embeds the brute-force queries one at a time), the migrated database and the
    environment record."""
    started, started_at = time.perf_counter(), harness.now()
    set_torch_threads(1)
    ensure_migrated()
    return started, started_at, environment()


def environment_line(env: dict) -> str:
    m, v, g = env["machine"], env["versions"], env["git"]
    return (f"{m['cores']} cores ({m['cpu']}), {m['memory_gib']} GiB; Python {v['python']}, Django {v['django']}, "
            f"PostgreSQL {v['postgres_server']} + pgvector {v['pgvector']}, torch {v['torch']}, "
            f"sentence-transformers {v['sentence_transformers']}, ir-measures {v['ir_measures']}, bm25s {v['bm25s']}; "
            f"commit {g['commit'][:12]}{' (dirty tree)' if g['dirty'] else ''}")


def ensure_migrated() -> None:
    """Apply migrations when the database is behind (a fresh clone); a no-op otherwise."""
    from django.core.management import call_command
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    if executor.migration_plan(executor.loader.graph.leaf_nodes()):
        log("applying migrations ...")
        call_command("migrate", interactive=False, verbosity=0)


# --------------------------------------------------------------------------------------------
# The API, a workspace per run


class Api:
    """The public HTTP API of the service under test (a running ``Server``) with a bearer key;
    every call timed. Each request opens its own connection, so client threads may share one."""

    def __init__(self, server: Server, key: str):
        self.server = server
        self.key = key

    def post(self, path: str, body: dict) -> dict:
        status, data = self.server.request("POST", path, json.dumps(body).encode(), self.key)
        if status != 200:
            raise BenchError(f"POST {path} answered {status}: {data[:2000]!r}\n{self.server.log_tail()}")
        return json.loads(data)

    def timed_post(self, path: str, body: dict) -> tuple[float, dict]:
        started = time.perf_counter()
        answer = self.post(path, body)
        return time.perf_counter() - started, answer


@dataclass
class BenchWorkspace:
    workspace: object
    key: str
    api: Api


@contextlib.contextmanager
def bench_workspace(label: str, catalog_dir: Path, *, keep: bool, workers: int, torch_threads: int = 1,
                    runtime: str | None = None):
    """A fresh workspace ``bench-<label>-<stamp>`` with ``catalog_dir`` loaded (and, with
    ``runtime``, switched to that runtime while still empty, so every record and query of it
    embeds with that runtime: ``reembed_switch``, docs/encoder.md), and the service
    under test: gunicorn with ``workers`` sync workers of ``torch_threads`` torch threads each,
    on this process's database, ``TOUCH_ON_READ`` off (returned records would otherwise get
    ``last_accessed`` updated, and the default rank expressions read ``age_hours(last_accessed)``,
    so earlier queries would nudge the order of later ones; every other setting as deployed).
    On exit the server stops and the workspace is deleted (with everything in it) unless ``keep``."""
    from catalog_app.models import Workspace
    from catalog_app.services.catalog_load import catalog_load
    from catalog_app.services.workspaces import workspace_create

    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:6]
    workspace, key = workspace_create(name=f"bench-{label}-{stamp}")
    server = None
    try:
        catalog_load(workspace=workspace, directory=catalog_dir)
        if runtime is not None:
            from catalog_app.services.reembed import reembed_switch

            reembed_switch(workspace, runtime)
        workspace.refresh_from_db()
        shown = catalog_dir.relative_to(ROOT) if catalog_dir.is_relative_to(ROOT) else catalog_dir
        log(f"workspace {workspace.name} (catalog {shown}); starting gunicorn with {workers} worker(s)")
        server = Server(workers=workers, env={"DATABASE_URL": database_url(connection.settings_dict),
                                              "DJANGO_SETTINGS_MODULE": "memseek_site.settings",
                                              "TOUCH_ON_READ": "false", "OMP_NUM_THREADS": str(torch_threads),
                                              # so each worker preloads the runtime it will embed with
                                              **({"EMBEDDING_RUNTIME": runtime} if runtime else {})})
        yield BenchWorkspace(workspace, key, Api(server, key))
    finally:
        if server is not None:
            server.stop()
        if keep:
            log(f"kept workspace {workspace.name}; key {key}")
        else:
            started = time.perf_counter()
            Workspace.objects.filter(pk=workspace.pk).delete()
            log(f"deleted workspace {workspace.name} ({time.perf_counter() - started:.1f}s)")


def ingest(api: Api, items: list[dict], *, desc: str, clients: int = 1) -> tuple[list[str], float]:
    """POST ``items`` in batches of 100 from ``clients`` concurrent client threads; returns the
    record id of every item (in order) and the seconds spent. Without a broker each batch is
    embedded inside its request, so two clients keep two workers encoding while one of them
    writes. With one client the records get their ``seq`` in item order; with more, batches
    interleave."""
    from concurrent.futures import ThreadPoolExecutor

    chunks = [items[start:start + BATCH] for start in range(0, len(items), BATCH)]
    ids: list[str | None] = [None] * len(items)
    started = time.perf_counter()
    with progress(total=len(items), desc=desc, unit="rec") as bar, ThreadPoolExecutor(clients) as pool:
        for number, answer in enumerate(pool.map(lambda chunk: api.post("/records", {"records": chunk}), chunks)):
            for outcome in answer["inserted"] + answer["duplicates"]:
                ids[number * BATCH + outcome["index"]] = outcome["id"]
            bar.update(len(chunks[number]))
    missing = [index for index, value in enumerate(ids) if value is None]
    if missing:
        raise BenchError(f"POST /records gave no id for items {missing[:10]}")
    return ids, time.perf_counter() - started


def wait_ready(workspace, expected: int, *, timeout_s: float = 1800) -> float:
    """Wait until ``expected`` records of ``workspace`` are ready (every required processor
    written); returns the seconds waited. Raises when time runs out or enrichment failed."""
    from catalog_app.models import Record

    started = time.perf_counter()
    with progress(total=expected, desc="waiting until ready", unit="rec") as bar:
        while True:
            ready = Record.objects.filter(workspace=workspace, enriched_at__isnull=False).count()
            bar.update(ready - bar.n)
            if ready >= expected:
                break
            if time.perf_counter() - started > timeout_s:
                raise BenchError(f"only {ready}/{expected} records ready after {timeout_s:.0f}s")
            time.sleep(0.5)
    failed = Record.objects.filter(workspace=workspace, enrichment_error__isnull=False) \
        .exclude(enrichment_error={}).count()
    if failed:
        raise BenchError(f"{failed} record(s) have enrichment errors; vectors would be missing")
    return time.perf_counter() - started


def stored_embeddings(workspace, record_ids: list[str]):
    """The stored vectors of ``record_ids`` (in that order) as a float32 matrix, read from the
    database exactly as the service stored them."""
    import numpy as np

    from catalog_app.models import RecordEmbedding

    rows = dict(RecordEmbedding.objects.filter(workspace=workspace, record_id__in=record_ids,
                                               space=_serving_embedding(workspace).space)
                .values_list("record_id", "embedding"))
    rows = {str(key): value for key, value in rows.items()}
    missing = [rid for rid in record_ids if rid not in rows]
    if missing:
        raise BenchError(f"{len(missing)} record(s) have no stored embedding")
    return np.asarray([rows[rid] for rid in record_ids], dtype=np.float32)


def query_vectors(workspace, texts: list[str], *, desc: str):
    """Query vectors computed exactly as the service computes them (``embed_query`` with the
    workspace's embedding configuration), one call per query."""
    import numpy as np

    from catalog_app.embedding import embed_query

    config = _serving_embedding(workspace)
    return np.asarray([embed_query(config, text, workspace_id=workspace.pk)
                       for text in progress(texts, desc=desc, unit="q")],
                      dtype=np.float32)


def _serving_embedding(workspace):
    """The workspace's embedding configuration on the runtime it serves from."""
    from catalog_app.catalog.runtime import catalog_for_workspace
    from catalog_app.embedding_serving import serving_config

    return serving_config(workspace.pk, catalog_for_workspace(workspace).value("models", "models").embedding)


# --------------------------------------------------------------------------------------------
# Configurations and runs


@dataclass
class Configuration:
    """One way of asking the service: a POST /search body or a view query, built per question."""

    name: str
    label: str
    kind: str  # "search" | "view"
    template: dict  # the SearchSpec (search) or the view parameters (view); "{q}" / "{entity}" filled per query
    view: str | None = None
    group: str = "service"
    note: str = ""
    extra: bool = False  # a tuned variant kept for exploration: run with --configs NAME or all
    runtime: str | None = None  # --configs NAME@RUNTIME: asked of a workspace served by that runtime

    def on_runtime(self, runtime: str) -> Configuration:
        return dataclasses.replace(self, name=f"{self.name}@{runtime}", label=f"{self.label}; {runtime} runtime",
                                   runtime=runtime)

    def request(self, q: str, entity: str | None = None) -> tuple[str, dict]:
        body = _fill(self.template, {"q": q, "entity": entity})
        if self.kind == "view":
            return f"/views/{self.view}/query", body
        return "/search", body

    def describe(self) -> dict:
        out = {"name": self.name, "label": self.label, "kind": self.kind, "group": self.group}
        if self.kind == "view":
            out["view"] = self.view
            out["parameters"] = self.template
        else:
            out["search"] = self.template
        if self.note:
            out["note"] = self.note
        if self.runtime:
            out["runtime"] = self.runtime
        return out


def add_configs_argument(parser, configurations: list[Configuration]) -> None:
    defaults = ", ".join(c.name for c in configurations if not c.extra)
    extras = ", ".join(c.name for c in configurations if c.extra)
    parser.add_argument("--configs", default=None,
                        help=f"comma list of service configurations, or all (default: {defaults}; "
                             f"also available: {extras or 'none'}); NAME@RUNTIME (torch, onnx, onnx-int8) asks "
                             "NAME of a workspace served by that embedding runtime")


def selected_configurations(parser, configurations: list[Configuration], value: str | None) -> list[Configuration]:
    """The configurations ``--configs`` names (all of them for ``all``; by default every one
    not marked ``extra``), in definition order, then the ``NAME@RUNTIME`` ones in the order given."""
    from catalog_app.onnx_encoder import RUNTIMES

    if value is None:
        return [c for c in configurations if not c.extra]
    wanted = list(dict.fromkeys(name.strip() for name in value.split(",") if name.strip()))
    if wanted == ["all"]:
        return list(configurations)
    by_name = {c.name: c for c in configurations}
    unknown = sorted({name.split("@", 1)[0] for name in wanted} - set(by_name))
    if unknown:
        parser.error(f"unknown configuration(s) {', '.join(unknown)}")
    runtimes = sorted({name.split("@", 1)[1] for name in wanted if "@" in name} - set(RUNTIMES))
    if runtimes:
        parser.error(f"unknown runtime(s) {', '.join(runtimes)} (one of {', '.join(RUNTIMES)})")
    return [c for c in configurations if c.name in wanted] + [
        by_name[stem].on_runtime(runtime) for stem, runtime in (name.split("@", 1) for name in wanted if "@" in name)]


def process_runtime() -> str:
    """The embedding runtime of this process's settings: the bench's own workspace serves from it."""
    from memseek_site.conf import memseek_setting

    return memseek_setting("EMBEDDING_RUNTIME")


def by_runtime(selected: list[Configuration]) -> tuple[list[Configuration], dict[str, list[Configuration]]]:
    """``(asked of the bench's workspace, {other runtime: configurations})``: a ``NAME@RUNTIME``
    on the process's own runtime runs in the bench's workspace, any other in one of its own."""
    here, elsewhere = [], {}
    for config in selected:
        if config.runtime in (None, process_runtime()):
            here.append(config)
        else:
            elsewhere.setdefault(config.runtime, []).append(config)
    return here, elsewhere


def run_on_runtimes(label: str, catalog_dir: Path, items: list[dict], keys: list[str],
                    questions: list[tuple[str, str, str | None]], elsewhere: dict[str, list[Configuration]], *,
                    keep: bool, workers: int, torch_threads: int) -> tuple[dict, dict]:
    """Per runtime of ``elsewhere``: a fresh workspace of ``catalog_dir`` served by it, the same
    ``items`` ingested, its configurations asked. Returns ``({config name: (RunResult with
    record ids replaced by the item's key)}, {runtime: timings})``."""
    runs, timings = {}, {}
    for runtime, configs in elsewhere.items():
        with bench_workspace(f"{label}-{runtime}", catalog_dir, keep=keep, workers=workers,
                             torch_threads=torch_threads, runtime=runtime) as bench:
            record_ids, ingest_s = ingest(bench.api, items, desc=f"POST /records ({runtime})", clients=workers)
            ready_s = wait_ready(bench.workspace, len(items))
            key_of = dict(zip(record_ids, keys))
            started = time.perf_counter()
            for config in configs:
                run = run_configuration(bench.api, config, questions, workers=workers)
                run.ranked = {qid: [key_of[r] for r in ids] for qid, ids in run.ranked.items()}
                runs[config.name] = run
            from catalog_app.models import RecordEmbedding

            space = _serving_embedding(bench.workspace).space
            timings[runtime] = {"records": len(items), "space": space,
                                "vectors": RecordEmbedding.objects.filter(workspace=bench.workspace,
                                                                          space=space).count(),
                                "ingest_s": round(ingest_s, 2), "ready_s": round(ready_s, 2),
                                "queries_s": round(time.perf_counter() - started, 2)}
    return runs, timings


def runtime_differences(per_query: dict, qids: list[str], measure: str, *, scale: float = 1.0) -> dict | None:
    """Every ``NAME@RUNTIME`` on another runtime than the process's against the same configuration
    on the process's runtime (``NAME@<it>``, else ``NAME``): the paired bootstrap of ``measure``
    per query (values times ``scale``). None when no configuration runs on another runtime."""
    home = process_runtime()
    differences = {}
    for name in per_query:
        if "@" not in name or name.endswith(f"@{home}"):
            continue
        stem = name.split("@", 1)[0]
        base = f"{stem}@{home}" if f"{stem}@{home}" in per_query else stem if stem in per_query else None
        if base is None:
            continue
        values = [scale * per_query[name][qid] for qid in qids]
        differences[name] = {"against": base,
                             **paired_bootstrap(values, [scale * per_query[base][qid] for qid in qids])}
    if not differences:
        return None
    return {"against_runtime": home, "measure": measure, "resamples": 2000, "seed": 0, "differences": differences}


def runtime_markdown(comparison: dict | None, unit: str = "") -> list[str]:
    if not comparison:
        return []
    lines = ["", f"## Runtimes against {comparison['against_runtime']}", "",
             f"Paired bootstrap of {comparison['measure']} per query ({comparison['resamples']} resamples, 95% "
             f"interval of the mean difference{unit}), each configuration against itself on "
             f"{comparison['against_runtime']}:", ""]
    for name, diff in comparison["differences"].items():
        lines.append(f"- `{name}` − `{diff['against']}`: {diff['mean']:+.4f} [{diff['low']:+.4f}, {diff['high']:+.4f}]")
    return lines


def _fill(value, slots: dict):
    if isinstance(value, str):
        if value in ("{q}", "{entity}"):
            return slots[value[1:-1]]
        return value
    if isinstance(value, dict):
        return {key: _fill(item, slots) for key, item in value.items()}
    if isinstance(value, list):
        return [_fill(item, slots) for item in value]
    return value


@dataclass
class RunResult:
    ranked: dict = field(default_factory=dict)  # query id -> [record id, ...] best first
    seconds: list = field(default_factory=list)  # per query

    def latency(self) -> dict:
        values = sorted(self.seconds)
        if not values:
            return {}
        return {"queries": len(values), "total_s": round(sum(values), 2),
                "mean_ms": round(1000 * statistics.fmean(values), 2),
                "p50_ms": round(1000 * values[len(values) // 2], 2),
                "p95_ms": round(1000 * values[min(len(values) - 1, int(0.95 * len(values)))], 2)}


def run_configuration(api: Api, config: Configuration, questions: list[tuple[str, str, str | None]], *,
                      workers: int = 1) -> RunResult:
    """Ask every ``(query id, text, entity)`` through the API from ``workers`` concurrent client
    threads; keep the hit ids in order. Latencies are per request under that load."""
    from concurrent.futures import ThreadPoolExecutor

    def ask(question: tuple[str, str, str | None]) -> tuple[float, list[str]]:
        _, text, entity = question
        seconds, answer = api.timed_post(*config.request(text, entity))
        return seconds, [hit["id"] for hit in answer["hits"]]

    result = RunResult()
    with progress(total=len(questions), desc=f"{config.name:>14}", unit="q") as bar, \
            ThreadPoolExecutor(workers) as pool:
        for (qid, _, _), (seconds, ids) in zip(questions, pool.map(ask, questions)):
            result.ranked[qid] = ids
            result.seconds.append(seconds)
            bar.update(1)
    return result


# --------------------------------------------------------------------------------------------
# Metrics (ir_measures)


def ir_run(ranked: dict, qids, *, to_doc=None) -> list:
    """An ir_measures run from ranked lists: strictly decreasing scores keep the order exactly;
    a query without results gets one placeholder so it counts as 0 instead of being dropped."""
    import ir_measures

    run = []
    for qid in qids:
        docs = ranked.get(qid) or []
        if to_doc is not None:
            docs = [to_doc(d) for d in docs]
        seen = set()
        docs = [d for d in docs if not (d in seen or seen.add(d))]
        if not docs:
            run.append(ir_measures.ScoredDoc(qid, NO_RESULT, 0.0))
        for position, doc in enumerate(docs):
            run.append(ir_measures.ScoredDoc(qid, doc, float(len(docs) - position)))
    return run


def ir_metrics(measures, qrels: list, run: list) -> tuple[dict, dict]:
    """Aggregate and per-query values of ``measures`` (ir_measures objects)."""
    import ir_measures

    aggregate = {str(m): float(v) for m, v in ir_measures.calc_aggregate(measures, qrels, run).items()}
    per_query: dict[str, dict] = {}
    for metric in ir_measures.iter_calc(measures, qrels, run):
        per_query.setdefault(metric.query_id, {})[str(metric.measure)] = float(metric.value)
    return aggregate, per_query


# --------------------------------------------------------------------------------------------
# Plain-library baselines

_BM25_V1_TERM = re.compile(r"[^\W_]+")


def bm25_v1_tokens(text: str) -> list[str]:
    """bm25_v1's tokenisation (lexical-search.md): runs of Unicode letters/digits, lowercased."""
    return _BM25_V1_TERM.findall(text.lower())


def bm25s_plain(corpus_texts: list[str], query_texts: list[str], k: int, *,
                desc: str = "bm25s (bm25_v1 tokens)") -> tuple[list[list[int]], float]:
    """bm25s with bm25_v1's tokenisation and parameters; distinct query terms as bm25_v1."""
    import bm25s

    started = time.perf_counter()
    retriever = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    retriever.index([bm25_v1_tokens(t) for t in corpus_texts], show_progress=False)
    queries = [list(dict.fromkeys(bm25_v1_tokens(q))) or [""] for q in query_texts]
    ranked = _bm25s_retrieve(retriever, queries, k, len(corpus_texts), desc)
    return ranked, time.perf_counter() - started


def bm25s_plain_scores(corpus_texts: list[str], query_texts: list[str]):
    """Every document's bm25s score (bm25_v1 tokens and parameters) for every query, dense."""
    import bm25s
    import numpy as np

    retriever = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    retriever.index([bm25_v1_tokens(t) for t in corpus_texts], show_progress=False)
    scores = np.zeros((len(query_texts), len(corpus_texts)), dtype=np.float32)
    for row, text in enumerate(query_texts):
        tokens = [t for t in dict.fromkeys(bm25_v1_tokens(text)) if t in retriever.vocab_dict]
        if tokens:
            scores[row] = retriever.get_scores(tokens)
    return scores


def minmax_mix(parts: list[tuple[float, object]], k: int) -> list[list[int]]:
    """Top k per row of sum(weight * min-max(matrix row)): a rank-expression mix computed in
    numpy over every document (the service normalises over its candidate pool instead)."""
    import numpy as np

    total = None
    for weight, matrix in parts:
        low = matrix.min(axis=1, keepdims=True)
        span = matrix.max(axis=1, keepdims=True) - low
        normal = np.where(span > 0, (matrix - low) / np.where(span > 0, span, 1), 0.0)
        total = weight * normal if total is None else total + weight * normal
    return brute_force_rank(total, k)


def brute_force_rank(scores, k: int) -> list[list[int]]:
    """Indexes of the k best scores of every row, best first (ties by index)."""
    import numpy as np

    ranked = []
    for row in scores:
        top = np.argpartition(-row, min(k, len(row) - 1))[:k] if len(row) > k else np.arange(len(row))
        ranked.append(sorted(top.tolist(), key=lambda i: (-float(row[i]), i)))
    return ranked


def bm25s_stemmed(corpus_texts: list[str], query_texts: list[str], k: int, *,
                  desc: str = "bm25s (stemmed)") -> tuple[list[list[int]], float]:
    """The data README's sanity-check setup: PyStemmer English, English stopwords, k1 0.9, b 0.4."""
    import bm25s
    import Stemmer

    started = time.perf_counter()
    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25(k1=0.9, b=0.4)
    retriever.index(bm25s.tokenize(corpus_texts, stopwords="en", stemmer=stemmer, show_progress=False),
                    show_progress=False)
    query_tokens = bm25s.tokenize(query_texts, stopwords="en", stemmer=stemmer, show_progress=False,
                                  return_ids=False)
    ranked = _bm25s_retrieve(retriever, [q or [""] for q in query_tokens], k, len(corpus_texts), desc)
    return ranked, time.perf_counter() - started


def bm25s_en(corpus_texts: list[str], query_texts: list[str], k: int, *,
             desc: str = "bm25s (en_v1)") -> tuple[list[list[int]], float]:
    """The ``bm25_en`` signal's setup in bm25s: PyStemmer English, English stopwords, k1 1.2,
    b 0.75, Lucene idf, distinct query terms."""
    import bm25s
    import Stemmer

    started = time.perf_counter()
    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    retriever.index(bm25s.tokenize(corpus_texts, stopwords="en", stemmer=stemmer, show_progress=False),
                    show_progress=False)
    query_tokens = bm25s.tokenize(query_texts, stopwords="en", stemmer=stemmer, show_progress=False,
                                  return_ids=False)
    ranked = _bm25s_retrieve(retriever, [list(dict.fromkeys(q)) or [""] for q in query_tokens], k,
                             len(corpus_texts), desc)
    return ranked, time.perf_counter() - started


def paired_bootstrap(values: list[float], baseline: list[float], *, resamples: int = 2000,
                     seed: int = 0) -> dict:
    """The mean of ``values - baseline`` (paired per query) and its 95% percentile bootstrap
    interval over ``resamples`` resamples of the queries."""
    import numpy as np

    differences = np.asarray(values, dtype=float) - np.asarray(baseline, dtype=float)
    if differences.size == 0:
        return {"mean": 0.0, "low": 0.0, "high": 0.0, "queries": 0}
    rng = np.random.default_rng(seed)
    means = differences[rng.integers(0, differences.size, (resamples, differences.size))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return {"mean": round(float(differences.mean()), 4), "low": round(float(low), 4), "high": round(float(high), 4),
            "queries": int(differences.size)}


def _bm25s_retrieve(retriever, query_tokens: list[list[str]], k: int, n_docs: int, desc: str) -> list[list[int]]:
    ranked = []
    for tokens in progress(query_tokens, desc=f"{desc:>24}", unit="q"):
        docs, scores = retriever.retrieve([tokens], k=min(k, n_docs), show_progress=False)
        ranked.append([int(d) for d, s in zip(docs[0], scores[0]) if s > 0])  # zero: shares no term
    return ranked


def brute_force(matrix, query_matrix, k: int) -> list[list[int]]:
    """Exact cosine (the vectors are unit length): every document scored, best k kept."""
    return brute_force_rank(query_matrix @ matrix.T, k)


def rrf(lists: list[list], constant: int, k: int) -> list:
    """Reciprocal rank fusion with equal weights; ties by first appearance."""
    scores: dict = {}
    for ranked in lists:
        for position, item in enumerate(ranked, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (constant + position)
    order = {item: i for i, item in enumerate(x for ranked in lists for x in ranked)}
    return sorted(scores, key=lambda item: (-scores[item], order[item]))[:k]


def overlap_at(a: dict, b: dict, qids: list[str], k: int) -> float:
    values = [len(set(a.get(q, [])[:k]) & set(b.get(q, [])[:k])) / max(1, min(k, len(b.get(q, [])[:k])))
              for q in qids]
    return sum(values) / len(values) if values else 0.0


# --------------------------------------------------------------------------------------------
# Output


def fmt(value, digits: int = 4) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def markdown_table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(fmt(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)
