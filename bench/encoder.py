#!/usr/bin/env python
"""The bundled model's runtimes (``EMBEDDING_RUNTIME``) side by side on the SciFact corpus.

    python bench/encoder.py [--data DIR] [--size N] [--queries N] [--threads T] [--out DIR]
    python -m bench encoder [same options]

Each runtime (torch, the baseline; onnx; onnx-int8) runs in a fresh spawned process of its own,
one after the other, with ``--threads`` intra-op threads (default: ``torch_threads_per_process``
for one process per usable core, as a worker pool runs), through Memseek's own
``catalog_app.embedding.embed_texts`` (its token-count calls, batch ``EMBEDDING_BATCH``):

1. the encoder is loaded (an ONNX graph from the ``var/onnx`` cache, exported first if absent)
   and warmed on a few texts;
2. every abstract of ``corpus.jsonl`` (title + newline + text, as ``bench scifact`` writes
   them) is encoded in one ``embed_texts`` call: records per second;
3. each of the first ``--queries`` claims of ``queries.jsonl`` is encoded alone, as a query is
   (no query cache): p50 and p95 milliseconds;
4. the process's peak resident memory (``ru_maxrss``) is reported.

Every ONNX vector is compared with the torch vector of the same text (cosine; the vectors are
unit length): min, p1, p50 and mean over the corpus and over the queries. Throughput and query
p50 are given beside torch's from the same run as ratios. Writes ``encoder.json`` and
``encoder.md`` to ``--out`` (default ``bench/results``).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import harness  # noqa: E402
from bench.scifact import DEFAULT_DATA  # noqa: E402  the same data set as bench scifact

RUNTIMES = ("torch", "onnx", "onnx-int8")
WARM_TEXTS = ["warming the encoder", "a second, somewhat longer text to warm the encoder's calls"]


def load_texts(data: Path, size: int | None, queries: int) -> tuple[list[str], list[str]]:
    """The corpus texts (title + newline + text) and the first ``queries`` query texts."""
    corpus = []
    with open(data / "corpus.jsonl", encoding="utf-8") as lines:
        for line in lines:
            doc = json.loads(line)
            corpus.append(f"{doc['title']}\n{doc['text']}")
            if size is not None and len(corpus) >= size:
                break
    asked = []
    with open(data / "queries.jsonl", encoding="utf-8") as lines:
        for line in lines:
            if len(asked) >= queries:
                break
            asked.append(json.loads(line)["text"])
    return corpus, asked


def _measure(runtime: str, threads: int, corpus: list[str], queries: list[str], out: str) -> dict:
    """Run in a spawned process: load, warm, encode, time; vectors go to ``out`` (numpy)."""
    os.environ["OMP_NUM_THREADS"] = str(threads)
    import resource
    from dataclasses import replace

    import numpy as np
    import torch
    from django.conf import settings

    # Only the settings the encoder reads: the full settings module would start (or attach to)
    # the embedded PostgreSQL, which this measure does not use. A process started under pytest
    # has its settings already (pytest-django configures them while the child imports).
    if not settings.configured:
        settings.configure(BASE_DIR=Path(__file__).resolve().parent.parent, MEMSEEK={})

    torch.set_num_threads(threads)
    from catalog_app.catalog.models_conf import build, default_body
    from catalog_app.embedding import embed_texts, local_encoder

    config = replace(build(default_body()).embedding, runtime=runtime)
    started = time.perf_counter()
    local_encoder(runtime)
    load_seconds = time.perf_counter() - started
    embed_texts(config, WARM_TEXTS)
    started = time.perf_counter()
    corpus_vectors = np.asarray(embed_texts(config, corpus), dtype=np.float32)
    corpus_seconds = time.perf_counter() - started
    query_vectors, query_ms = [], []
    for text in queries:
        started = time.perf_counter()
        query_vectors.append(embed_texts(config, [text])[0])
        query_ms.append((time.perf_counter() - started) * 1000)
    np.save(f"{out}/{runtime}-corpus.npy", corpus_vectors)
    np.save(f"{out}/{runtime}-queries.npy", np.asarray(query_vectors, dtype=np.float32))
    return {"runtime": runtime, "threads": threads, "load_seconds": load_seconds,
            "corpus_seconds": corpus_seconds, "records_per_second": len(corpus) / corpus_seconds,
            "query_ms_p50": float(np.percentile(query_ms, 50)), "query_ms_p95": float(np.percentile(query_ms, 95)),
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def agreement(vectors, reference) -> dict:
    """Cosine of each row of ``vectors`` with the same row of ``reference`` (unit rows)."""
    import numpy as np

    cosines = (vectors.astype(np.float64) * reference.astype(np.float64)).sum(axis=1)
    return {"min": float(cosines.min()), "p1": float(np.percentile(cosines, 1)),
            "p50": float(np.percentile(cosines, 50)), "mean": float(cosines.mean()), "count": len(cosines)}


def run(corpus: list[str], queries: list[str], threads: int) -> dict:
    """Every runtime measured in its own spawned process; agreement with torch's vectors."""
    import tempfile

    import numpy as np

    context = multiprocessing.get_context("spawn")
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-encoder.") as work:
        for runtime in RUNTIMES:
            pool = context.Pool(1)
            try:
                results[runtime] = pool.apply(_measure, (runtime, threads, corpus, queries, work))
                # close and join, not the context manager's terminate: a process killed in its
                # exit handlers can leave shared files (the embedded server's pid list) half-written.
                pool.close()
            except BaseException:
                pool.terminate()
                raise
            finally:
                pool.join()
        reference = {part: np.load(f"{work}/torch-{part}.npy") for part in ("corpus", "queries")}
        for runtime in RUNTIMES[1:]:
            figures = results[runtime]
            figures["corpus_cosine"] = agreement(np.load(f"{work}/{runtime}-corpus.npy"), reference["corpus"])
            figures["query_cosine"] = (agreement(np.load(f"{work}/{runtime}-queries.npy"), reference["queries"])
                                       if queries else None)
            figures["throughput_vs_torch"] = figures["records_per_second"] / results["torch"]["records_per_second"]
            figures["query_p50_speedup_vs_torch"] = results["torch"]["query_ms_p50"] / figures["query_ms_p50"]
            figures["peak_rss_vs_torch"] = figures["peak_rss_mib"] / results["torch"]["peak_rss_mib"]
    return results


def report(results: dict, meta: dict) -> str:
    lines = [f"# Encoder runtimes on SciFact ({meta['corpus_texts']} abstracts, {meta['queries']} queries)", "",
             f"{meta['when']}; {meta['threads']} intra-op thread(s) per process; {meta['machine']}; "
             f"commit {meta['commit']}", "",
             "| runtime | records/s | × torch | query p50 ms | torch ÷ it | query p95 ms | peak RSS MiB | × torch "
             "| corpus cos min | p1 | p50 | query cos min | load s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for runtime, r in results.items():
        corpus = r.get("corpus_cosine") or {}
        query = r.get("query_cosine") or {}
        lines.append(
            f"| {runtime} | {r['records_per_second']:.1f} | {r.get('throughput_vs_torch', 1.0):.2f} "
            f"| {r['query_ms_p50']:.2f} | {r.get('query_p50_speedup_vs_torch', 1.0):.2f} | {r['query_ms_p95']:.2f} "
            f"| {r['peak_rss_mib']:.0f} | {r.get('peak_rss_vs_torch', 1.0):.2f} "
            f"| {_cos(corpus.get('min'))} | {_cos(corpus.get('p1'))} | {_cos(corpus.get('p50'))} "
            f"| {_cos(query.get('min'))} | {r['load_seconds']:.1f} |")
    return "\n".join(lines) + "\n"


def _cos(value) -> str:
    return "–" if value is None else f"{value:.5f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--size", type=int, default=None, help="encode only the first N abstracts")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--threads", type=int, default=None)
    harness.add_out_argument(parser)
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memseek_site.settings")
    from catalog_app.embedding import torch_threads_per_process

    threads = args.threads or torch_threads_per_process(len(os.sched_getaffinity(0)))
    corpus, queries = load_texts(args.data, args.size, args.queries)
    results = run(corpus, queries, threads)
    meta = {"when": datetime.now(UTC).isoformat(timespec="seconds"), "threads": threads,
            "corpus_texts": len(corpus), "queries": len(queries), "machine": _machine(), "commit": _commit()}
    harness.publish({"meta": meta, "runtimes": results}, out=args.out, name="encoder",
                    report=lambda payload: report(payload["runtimes"], payload["meta"]))
    return 0


def _machine() -> str:
    machine = harness.machine()
    return (f"{machine['usable_cores']} usable cores ({machine['cpu'] or 'unknown CPU'}), "
            f"load average {harness.load_average()[0]:.2f} at the end")


def _commit() -> str:
    git = harness.git_state()
    return git["commit"][:12] + (" (dirty tree)" if git["dirty"] else "") if git["commit"] else "unknown"


if __name__ == "__main__":
    sys.exit(main())
