"""The latency half of ``bench brief``: ``POST /memory/search`` (the brief, no model call) over
the search benchmark's corpus, in-process, beside the hybrid ``/search`` service.

The corpus is ``bench/search.py``'s (``search_setup.build_corpus``: ``bench/corpus.py`` records
with real MiniLM vectors cached under ``--cache``) in its own database
``<prefix>_<size>``, with ``bench/catalogs/retrieve`` loaded over it as ``bench retrieve`` does
(``main`` version 2 declares the embedding processor, so the similarity leg runs; there is no
``cheap`` model, so no brief calls one). Each query is embedded once beforehand and every call
passes a trace that hands the vector back (``bench/tracing.py``): the figures exclude the query
embedding. Brief and baselines alternate query by query, rotating which goes first. The
baselines are the hybrid ``/search`` service and the brief without its neighbour lending
(``MEMORY_NEIGHBOUR_SHARE`` 0: the fused ranking alone), so the lending's cost is a same-run ratio.

``--vectors words`` stores, instead of MiniLM's vector of each text, the normalised mean of
MiniLM's vectors of its words (``search_setup.word_mean_embeddings``; a few thousand words to
encode instead of 100,000 texts, in its own database ``<prefix>_<size>_words``): the same index,
dimensions and query vectors, for a latency run on a machine too busy to encode the corpus.
"""
from __future__ import annotations

import os
import time

from bench import search_setup as setup
from bench.retrieve import prepare
from bench.search_setup import latency_summary, progress
from bench.tracing import VectorCache

HITS = 10


def brief_body(query: dict) -> dict:
    body = {"query": query["q"]}
    if query.get("entity"):
        body["entity"] = query["entity"]
    return body


def hybrid_body(query: dict) -> dict:
    scope = {"collections": ["main"]}
    if query.get("entity"):
        scope["entities"] = [query["entity"]]
    return {"mode": "hybrid", "q": query["q"], "scope": scope, "k": HITS, "include": ["text", "occurred_at"]}


def measure(args, size: int) -> dict:
    database = f"{args.database_prefix}_{size}" + ("_words" if args.vectors == "words" else "")
    with setup.bench_database(database, drop=args.drop, cache=args.cache):
        return _measure(args, size, database)


def _measure(args, size: int, database: str) -> dict:
    from django.conf import settings
    from django.test import override_settings

    from catalog_app.catalog.runtime import catalog_for_workspace
    from retrieval_app.memory.brief import memory_search
    from search_app.services import search_run

    started = time.perf_counter()
    corpus = setup.build_corpus(size, database=database, rebuild=args.rebuild, seed=args.seed, cache=args.cache,
                                vectors=args.vectors)
    prepared = prepare(corpus)
    workspace = corpus["workspace"]
    workspace.refresh_from_db()
    queries = setup.query_texts(corpus["items"], args.queries, args.seed)
    config = catalog_for_workspace(workspace).value("models", "models").embedding
    embedding, vectors = setup.measure_query_embedding(config, workspace.pk,
                                                       list(dict.fromkeys(q["q"] for q in queries)),
                                                       f"{size}: query embedding")
    cache = VectorCache(vectors)
    previous = dict(getattr(settings, "MEMSEEK", {}) or {})
    settings.MEMSEEK = {**previous, "TOUCH_ON_READ": False}
    fused_only = {**previous, "TOUCH_ON_READ": False, "MEMORY_NEIGHBOUR_SHARE": 0.0}

    def brief_fused_only(query):
        with override_settings(MEMSEEK=fused_only):
            return memory_search(workspace=workspace, body=brief_body(query), trace=cache)

    steps = [("brief", lambda q: memory_search(workspace=workspace, body=brief_body(q), trace=cache)),
             ("hybrid_search", lambda q: search_run(workspace=workspace, body=hybrid_body(q), trace=cache)),
             ("brief_fused_only", brief_fused_only)]
    times = {name: [] for name, _ in steps}
    found = []
    try:
        for query in progress(queries, desc=f"{size}: warm-up", unit="q"):
            found.append(steps[0][1](query)["found"])
            steps[1][1](query)
        load_start = os.getloadavg()[0]
        bar = progress(total=args.iterations * len(queries), desc=f"{size}: timed passes", unit="q")
        for iteration in range(args.iterations):
            for index, query in enumerate(queries):
                shift = (iteration + index) % len(steps)
                for name, step in steps[shift:] + steps[:shift]:
                    began = time.perf_counter()
                    step(query)
                    times[name].append(time.perf_counter() - began)
                bar.update(1)
        bar.close()
    finally:
        settings.MEMSEEK = previous
    out = {name: latency_summary(values) for name, values in times.items()}
    out["ratio_p50"] = out["brief"]["p50_ms"] / out["hybrid_search"]["p50_ms"]
    out["neighbours_ratio_p50"] = out["brief"]["p50_ms"] / out["brief_fused_only"]["p50_ms"]
    return {"size": size, "vectors": args.vectors, "build": corpus["build"],
            "prepared": prepared, "queries": len(queries),
            "iterations": args.iterations, "latency": out, "query_embedding": embedding,
            "mean_found": sum(found) / len(found), "vector_cache_misses": cache.misses,
            "load_average_1m": [round(load_start, 2), round(os.getloadavg()[0], 2)],
            "seconds": time.perf_counter() - started}
