#!/usr/bin/env python
"""Retrieval quality on BEIR SciFact, through the public API, beside plain-library baselines.

    python bench/scifact.py [--data DIR] [--qrels train] [--out DIR] [--size N] [--queries N] [--keep]
    python -m bench scifact [same options]

1. A fresh workspace gets ``bench/catalogs/scifact`` (event collection ``abstracts`` with a
   required MiniLM embedding processor, and the two-source RRF views).
2. Every abstract of ``corpus.jsonl`` is written through ``POST /records`` in batches of 100:
   text = title + newline + abstract, ``content.doc_id`` and ``dedupe_key`` carry the BEIR id.
   Enrichment runs inside each request after its commit (no broker), two requests at a time
   (``--workers``); the run waits until every record is ready.
3. Every query of ``qrels/<split>.tsv`` (default ``train``: 809 claims, 919 judgements; the
   test judgements are held out, see the data README) is asked through the API in each
   configuration (``CONFIGURATIONS``) with k = 100.
4. Baselines in the same run: bm25s over the same title+text with bm25_v1's tokenisation (no
   stemming or stopwords, k1 1.2, b 0.75, Lucene idf, distinct query terms), bm25s with the
   data README's setup (PyStemmer English stemmer, English stopwords, k1 0.9, b 0.4), exact
   brute-force cosine over the very vectors the service stored (numpy; query vectors from the
   service's own ``embed_query``), and RRF (constant 60) of the first and third computed in
   Python: the library form of the RRF view.
5. nDCG@10, R@100 and RR@10 (MRR@10) from ir_measures; recall at 1..100 for the plot.

Writes ``scifact.json``, ``scifact.md``, ``scifact.png`` (metrics per configuration) and
``scifact_recall.png`` (recall@k curves) to ``--out`` (default ``bench/results``). ``--size N``
ingests only the first N abstracts (queries are then limited to those with a judged abstract
among them, judgements restricted to them: figures are not comparable with full runs);
``--queries N`` asks only the first N queries. ``--configs NAME@RUNTIME`` (e.g.
``example@onnx-int8``) asks NAME of a second workspace whose records and queries embed with that
runtime (the same abstracts ingested again), and reports it against NAME on the process's runtime
(``EMBEDDING_RUNTIME``, torch by default) with a paired bootstrap interval.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import harness  # noqa: E402
from bench.quality_common import (ROOT, Configuration, add_configs_argument, begin_run, bench_workspace,  # noqa: E402
                                  bm25s_en, bm25s_plain, bm25s_plain_scores, bm25s_stemmed, brute_force, by_runtime,
                                  paired_bootstrap, run_on_runtimes, runtime_differences,
                                  runtime_markdown,
                                  environment_line, fmt, ingest, ir_metrics, ir_run, log, markdown_table,
                                  minmax_mix, overlap_at, query_vectors, rrf, run_configuration,
                                  selected_configurations, sha256_of, stored_embeddings, wait_ready,
                                  write_json)
from bench.rank_sweep import example_hybrid_rank, sweep, with_stemmed_bm25  # noqa: E402

DEFAULT_DATA = Path("/work/shared/bench/beir-scifact")
CATALOG = ROOT / "bench" / "catalogs" / "scifact"
ENTITY = "scifact"
K = 100
RRF_CONSTANT = 60
BM25_TARGET = 0.665  # BEIR paper's BM25 (Anserini multifield) on SciFact
FUSED_TARGET = 0.70
MEASURE_NAMES = ("nDCG@10", "R@100", "RR@10")
RECALL_CUTOFFS = (1, 2, 3, 5, 10, 20, 30, 50, 100)
SCOPE = {"collections": ["abstracts"]}

BASELINE_OF = {"text": "bm25s_stemmed", "bm25": "bm25s_plain", "bm25_en": "bm25s_en", "example_en": "mix_library",
               "mix_en": "mix_library", "vector": "brute_force", "vector_sim": "brute_force",
               "hybrid": "rrf_library", "example": "mix_library", "rrf": "rrf_library", "rrf_c10": "rrf_library_c10",
               "mix": "mix_library"}

CONFIGURATIONS = [
    Configuration("text", "text mode, default rank (ts_rank_cd)", "search",
                  {"q": "{q}", "mode": "text", "scope": SCOPE, "k": K}, group="lexical"),
    Configuration("bm25", "text mode ranked by [bm25], candidates 1000", "search",
                  {"q": "{q}", "mode": "text", "scope": SCOPE, "rank": ["bm25"], "params": {"candidates": 1000},
                   "k": K}, group="lexical"),
    Configuration("vector", "vector mode, default rank (MiniLM)", "search",
                  {"q": "{q}", "mode": "vector", "scope": SCOPE, "k": K}, group="vector"),
    Configuration("vector_sim", "vector mode ranked by [similarity]", "search",
                  {"q": "{q}", "mode": "vector", "scope": SCOPE, "rank": ["similarity"], "k": K}, group="vector",
                  note="isolates the HNSW index from the default rank's recency term"),
    Configuration("hybrid", "hybrid mode, default rank", "search",
                  {"q": "{q}", "mode": "hybrid", "scope": SCOPE, "k": K}, group="fused"),
    Configuration("example", "hybrid mode, the example catalog's default rank", "search",
                  {"q": "{q}", "mode": "hybrid", "scope": SCOPE, "rank": example_hybrid_rank(), "k": K}, group="fused",
                  note="what GET /search ranks with in a workspace that loaded fixtures/catalogs/example"),
    Configuration("rrf", "view abstracts_rrf: RRF(bm25, vector), constant 60", "view",
                  {"q": "{q}", "k": K}, view="abstracts_rrf", group="fused"),
    Configuration("rrf_c10", "view abstracts_rrf_c10: RRF(bm25, vector), constant 10 (tuned)", "view",
                  {"q": "{q}", "k": K}, view="abstracts_rrf_c10", group="fused", extra=True),
    Configuration("mix", "view abstracts_mix: hybrid, .4 bm25 + .6 similarity (tuned)", "view",
                  {"q": "{q}", "k": K}, view="abstracts_mix", group="fused"),
    Configuration("bm25_en", "text mode ranked by [bm25_en] (stemmed English, en_v1), candidates 1000", "search",
                  {"q": "{q}", "mode": "text", "scope": SCOPE, "rank": ["bm25_en"], "params": {"candidates": 1000},
                   "k": K}, group="lexical"),
    Configuration("example_en", "hybrid mode, the example catalog's default rank with bm25_en for bm25", "search",
                  {"q": "{q}", "mode": "hybrid", "scope": SCOPE, "rank": with_stemmed_bm25(example_hybrid_rank()),
                   "k": K}, group="fused"),
    Configuration("mix_en", "hybrid mode, .4 normalize(bm25_en) + .6 normalize(similarity)", "search",
                  {"q": "{q}", "mode": "hybrid", "scope": SCOPE, "k": K,
                   "rank": ["sum", [["product", 0.4, ["normalize", ["bm25_en"]]],
                                    ["product", 0.6, ["normalize", ["similarity"]]]]]}, group="fused"),
]
DEFAULT_CONFIGURATION = "example"  # what the paired bootstrap compares every configuration with

# What was tried to reach the targets. Exploration ran on the same 809 train queries (the
# issue's tuning set), offline over the service's own signals: bm25s with bm25_v1's tokens
# reproduces the service's exact BM25 (identical nDCG@10, top-100 overlap 1.0) and the stored
# vectors its similarity; the chosen settings were then run through the API (rows rrf_c10, mix).
TRIED = [
    "Exact BM25 needed nothing: 0.6704 nDCG@10 on the train queries, identical to bm25s with the same "
    "tokenisation (no stemming or stopwords, k1 1.2, b 0.75).",
    "The RRF view as specified (bm25 + vector, 100 per source, constant 60) reaches 0.695-0.699, just under 0.70. "
    "Explored: rank constant 5/10/20/30/60 x depth 50/100/200 per source x weights bm25:vector 1:1, 1:1.5, 1.5:1, "
    "1:2. The constant matters most (depth 100, 1:1: 60 -> 0.699, 30 -> 0.704, 20 -> 0.708, 10 -> 0.713, "
    "5 -> 0.719); depth changes < 0.002; unequal weights lose. View abstracts_rrf_c10 uses constant 10.",
    "Hybrid mode with one rank expression, a convex mix of min-max normalised signals over the candidate pool: "
    "bm25 weight 0.2/0.3/0.4/0.5/0.6 against similarity gives 0.715/0.724/0.726/0.718/0.710 (simulated pool); "
    "adding text_match (ts_rank_cd) moves it by <= 0.002 (0.3 bm25 + 0.1 text_match: 0.728). View abstracts_mix "
    "uses 0.4 bm25 + 0.6 similarity.",
    "Three-source RRF (text_match + bm25 + vector): 0.690-0.693 at constants 5-10, below two sources: "
    "ts_rank_cd alone scores 0.386 here.",
    "The hybrid mode's default rank, normalize(max(similarity, text_match)), scores like text mode: ts_rank_cd "
    "is unbounded (up to 2.8 on these abstracts with the OR-ed query) while cosine stays below 1, so the max is "
    "nearly always the text match. An engine default, left unchanged and reported.",
    "Caveat: the tuned weights were chosen on the queries reported here, so rrf_c10 and mix are optimistic "
    "for held-out queries; the flat optimum (constants 5-20, bm25 weights 0.3-0.5 all within 0.01) suggests "
    "little overfitting.",
]


# --------------------------------------------------------------------------------------------
# Data


def load_data(data: Path, split: str, size: int | None, max_queries: int | None) -> dict:
    corpus = []
    with open(data / "corpus.jsonl", encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                doc = json.loads(line)
                corpus.append({"id": str(doc["_id"]), "title": doc.get("title") or "", "text": doc.get("text") or ""})
    if size is not None:
        corpus = corpus[:size]
    doc_ids = {doc["id"] for doc in corpus}
    queries = {}
    with open(data / "queries.jsonl", encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                query = json.loads(line)
                queries[str(query["_id"])] = query["text"]
    qrels: dict[str, dict[str, int]] = {}
    qrels_path = data / "qrels" / f"{split}.tsv"
    with open(qrels_path, encoding="utf-8") as handle:
        for number, line in enumerate(handle):
            parts = line.rstrip("\r\n").split("\t")
            if number == 0 and parts[0] == "query-id" or len(parts) < 3:
                continue
            qid, did, score = parts[0], parts[1], int(parts[2])
            if did in doc_ids and score > 0:
                qrels.setdefault(qid, {})[did] = score
    order = [qid for qid in qrels if qid in queries]
    if max_queries is not None:
        order = order[:max_queries]
    files = {name: {"bytes": (data / name).stat().st_size, "sha256": sha256_of(data / name)}
             for name in ("corpus.jsonl", "queries.jsonl", f"qrels/{split}.tsv")}
    return {"corpus": corpus, "queries": [(qid, queries[qid]) for qid in order],
            "qrels": {qid: qrels[qid] for qid in order}, "files": files}


def record_text(doc: dict) -> str:
    return f"{doc['title']}\n{doc['text']}" if doc["title"] else doc["text"]


def record_items(corpus: list[dict]) -> list[dict]:
    return [{"entity": ENTITY, "collection": "abstracts", "type": "abstract", "text": record_text(doc),
             "content": {"doc_id": doc["id"], "title": doc["title"]}, "dedupe_key": f"scifact:{doc['id']}"}
            for doc in corpus]


# --------------------------------------------------------------------------------------------
# Baselines


# --------------------------------------------------------------------------------------------
# Evaluation


def evaluate(ranked_docs: dict[str, list[str]], qrels_list: list, qids: list[str]) -> dict:
    from ir_measures import RR, R, nDCG

    run = ir_run(ranked_docs, qids)
    measures = [nDCG @ 10, R @ 100, RR @ 10] + [R @ c for c in RECALL_CUTOFFS if c != 100]
    aggregate, per_query = ir_metrics(measures, qrels_list, run)
    return {"metrics": {name: aggregate[name] for name in MEASURE_NAMES},
            "recall_curve": {str(c): aggregate[f"R@{c}"] for c in RECALL_CUTOFFS},
            "per_query_ndcg10": {qid: per_query.get(qid, {}).get("nDCG@10", 0.0) for qid in qids}}


def hnsw_loss(runs: dict, configurations: dict, baselines: dict, qids: list[str]) -> dict:
    """What the HNSW index (and the default rank's recency term) lose against exact cosine."""
    out = {"brute_force_r100": baselines["brute_force"]["metrics"]["R@100"]}
    for name in ("vector", "vector_sim"):
        if name in configurations:
            out[f"{name}_r100"] = configurations[name]["metrics"]["R@100"]
            out[f"{name}_minus_brute_r100"] = out[f"{name}_r100"] - out["brute_force_r100"]
            out[f"{name}_overlap_at_100"] = overlap_at(runs[name], runs["brute_force"], qids, 100)
            out[f"{name}_overlap_at_10"] = overlap_at(runs[name], runs["brute_force"], qids, 10)
    return out


def targets(configurations: dict) -> list[dict]:
    out = []
    if "bm25" in configurations:
        value = configurations["bm25"]["metrics"]["nDCG@10"]
        out.append({"name": "exact BM25 above BEIR's BM25", "config": "bm25", "value": value, "target": BM25_TARGET,
                    "met": value > BM25_TARGET, "margin": value - BM25_TARGET})
    fused = [name for name, entry in configurations.items() if entry["group"] == "fused"]
    if fused:
        best = max(fused, key=lambda name: configurations[name]["metrics"]["nDCG@10"])
        value = configurations[best]["metrics"]["nDCG@10"]
        out.append({"name": "best fused configuration", "config": best, "value": value, "target": FUSED_TARGET,
                    "met": value >= FUSED_TARGET, "margin": value - FUSED_TARGET})
    if "rrf" in configurations:
        value = configurations["rrf"]["metrics"]["nDCG@10"]
        out.append({"name": "the RRF view as specified (constant 60)", "config": "rrf", "value": value,
                    "target": FUSED_TARGET, "met": value >= FUSED_TARGET, "margin": value - FUSED_TARGET})
    return out


# --------------------------------------------------------------------------------------------
# Output


def plots(out: Path, stem: str, rows: list[dict], title: str) -> list[str]:
    import matplotlib.pyplot as plt
    import numpy as np

    names = [row["name"] for row in rows]
    x = np.arange(len(names))
    width = 0.27
    fig, ax = plt.subplots(figsize=(max(8, 0.9 * len(names) + 2), 4.8))
    for offset, measure in zip((-width, 0, width), MEASURE_NAMES):
        values = [row["metrics"][measure] for row in rows]
        bars = ax.bar(x + offset, values, width, label=measure)
        ax.bar_label(bars, fmt="%.3f", fontsize=6, rotation=90, padding=2)
    ax.axhline(BM25_TARGET, color="grey", linestyle="--", linewidth=0.8, label=f"BM25 (BEIR) {BM25_TARGET}")
    ax.axhline(FUSED_TARGET, color="black", linestyle=":", linewidth=0.8, label=f"fused target {FUSED_TARGET}")
    ax.set_xticks(x, names, rotation=30, ha="right", fontsize=8)
    ax.set_ylim(0, 1.08)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, ncol=3, loc="upper left")
    fig.tight_layout()
    first = out / f"{stem}.png"
    fig.savefig(first, dpi=120)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4.8))
    for row in rows:
        curve = row["recall_curve"]
        style = "--" if row.get("baseline") else "-"
        ax.plot([int(c) for c in curve], list(curve.values()), style, marker=".", label=row["name"])
    ax.set_xscale("log")
    ax.set_xticks(RECALL_CUTOFFS, [str(c) for c in RECALL_CUTOFFS])
    ax.set_xlabel("k")
    ax.set_ylabel("recall@k (ir_measures R@k)")
    ax.set_title(f"{title}: recall@k", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    second = out / f"{stem}_recall.png"
    fig.savefig(second, dpi=120)
    plt.close(fig)
    return [first.name, second.name]


def markdown(result: dict) -> str:
    env = result["environment"]
    data = result["data"]
    lines = [f"# SciFact retrieval quality ({data['split']} judgements)", "",
             f"{data['queries']} queries, {data['documents']} abstracts, {data['judgements']} judgements; "
             f"every query through the public API with k = {K}. Metrics from ir_measures "
             f"({', '.join(MEASURE_NAMES)}; RR@10 is MRR@10). Started {result['started_at']}; "
             f"{environment_line(env)}.", "",
             "## Service configurations", ""]
    baseline_of = result["baseline_of"]
    rows = []
    for name, entry in result["configurations"].items():
        base = baseline_of.get(name)
        base_ndcg = result["baselines"][base]["metrics"]["nDCG@10"] if base else None
        ratio = entry["metrics"]["nDCG@10"] / base_ndcg if base_ndcg else None
        rows.append([f"`{name}`", entry["label"], *(entry["metrics"][m] for m in MEASURE_NAMES),
                     f"{ratio:.3f} × `{base}`" if ratio else "–", f"{entry['latency']['mean_ms']:.1f}",
                     f"{entry['latency']['p95_ms']:.1f}"])
    lines.append(markdown_table(["config", "what", *MEASURE_NAMES, "nDCG@10 ratio to baseline", "mean ms", "p95 ms"],
                                rows))
    lines += ["", "## Plain-library baselines (same run, same texts)", ""]
    rows = [[f"`{name}`", entry["label"], *(entry["metrics"][m] for m in MEASURE_NAMES),
             f"{1000 * entry['seconds'] / max(1, data['queries']):.1f}"]
            for name, entry in result["baselines"].items()]
    lines.append(markdown_table(["baseline", "what", *MEASURE_NAMES, "ms per query"], rows))
    hnsw = result["hnsw"]
    if "vector_sim_r100" in hnsw or "vector_r100" in hnsw:
        lines += ["", "## What HNSW loses", ""]
    if "vector_sim_r100" in hnsw:
        lines.append(f"- R@100: vector mode ranked by [similarity] {fmt(hnsw['vector_sim_r100'])}, brute-force cosine "
                     f"over the same stored vectors {fmt(hnsw['brute_force_r100'])}: difference "
                     f"{hnsw['vector_sim_minus_brute_r100']:+.4f}; top-100 overlap with brute force "
                     f"{hnsw['vector_sim_overlap_at_100']:.4f}, top-10 {hnsw['vector_sim_overlap_at_10']:.4f}.")
    if "vector_r100" in hnsw:
        lines.append(f"- Vector mode with the default rank (normalised similarity + recency decay on last_accessed): "
                     f"R@100 {fmt(hnsw['vector_r100'])}, difference to brute force "
                     f"{hnsw['vector_minus_brute_r100']:+.4f}; top-100 overlap {hnsw['vector_overlap_at_100']:.4f}.")
    lines += ["", "## Exact BM25 beside bm25s, and every configuration beside the default", ""]
    if "bm25_agreement" in result:
        lines.append(f"- Exact BM25 in the service vs bm25s with the same tokenisation: top-100 overlap "
                     f"{result['bm25_agreement']['overlap_at_100']:.4f}, "
                     f"top-10 {result['bm25_agreement']['overlap_at_10']:.4f}.")
    if "bm25_en_agreement" in result:
        lines.append(f"- bm25_en in the service vs bm25s with the same stemmer, stopwords and constants: top-100 "
                     f"overlap {result['bm25_en_agreement']['overlap_at_100']:.4f}, "
                     f"top-10 {result['bm25_en_agreement']['overlap_at_10']:.4f} (records tied at the 10th "
                     "score are ordered by UUID in the service, by position in bm25s).")
    lines += runtime_markdown(result.get("runtime_bootstrap"))
    if "paired_bootstrap" in result:
        boot = result["paired_bootstrap"]
        lines.append(f"- Paired bootstrap against `{boot['against']}` ({boot['measure']}, {boot['resamples']} "
                     "resamples of the queries, 95% interval of the mean difference):")
        for name, diff in boot["differences"].items():
            lines.append(f"  - `{name}`: {diff['mean']:+.4f} [{diff['low']:+.4f}, {diff['high']:+.4f}]")
    lines += ["", "## Targets", ""]
    rows = [[t["name"], t["config"], t["value"], t["target"], "met" if t["met"] else "missed",
             f"{t['margin']:+.4f}"] for t in result["targets"]]
    lines.append(markdown_table(["target", "config", "nDCG@10", "target", "", "margin"], rows))
    if result.get("tried"):
        lines += ["", "What was tried:", ""] + [f"- {item}" for item in result["tried"]]
    lines += ["", "## Reference figures (published, test split: not the same queries)", ""]
    lines += [f"- {item}" for item in result["reference"]]
    timings = result["timings"]
    lines += ["", "## Run time", "",
              f"- Total {timings['total_s']:.0f} s: data {timings['load_s']:.1f} s, ingest {timings['ingest_s']:.1f} s "
              f"({data['documents'] / max(timings['ingest_s'], 1e-9):.1f} records/s through POST /records, "
              f"embedding included), waiting for ready {timings['ready_s']:.1f} s, service queries "
              f"{timings['queries_s']:.1f} s, baselines {timings['baselines_s']:.1f} s, cleanup "
              f"{timings.get('cleanup_s', 0):.1f} s.",
              "", f"Plots: {', '.join(f'`{p}`' for p in result['plots'])}. Settings: {json.dumps(result['settings'])}."]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------


def _arguments(argv):
    """The parser and the parsed options of a run."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"BEIR directory (default {DEFAULT_DATA})")
    parser.add_argument("--qrels", default="train", help="judgements file qrels/NAME.tsv (default train)")
    harness.add_out_argument(parser)
    parser.add_argument("--size", type=int, default=None, help="ingest only the first N abstracts")
    parser.add_argument("--queries", type=int, default=None, help="ask only the first N queries")
    add_configs_argument(parser, CONFIGURATIONS)
    parser.add_argument("--keep", action="store_true", help="keep the workspace (prints its name and key)")
    parser.add_argument("--sweep", action="store_true",
                        help="also sweep hybrid rank formulas over the service's pools (bench/rank_sweep.py)")
    parser.add_argument("--name", default="scifact", help="output file stem (default scifact)")
    parser.add_argument("--workers", type=int, default=2,
                        help="gunicorn workers, and as many concurrent API clients (default 2: one per core)")
    parser.add_argument("--torch-threads", type=int, default=1,
                        help="torch intra-op threads of each gunicorn worker (default 1: the workers share the cores)")
    args = parser.parse_args(argv)
    if args.size is not None and args.size < 1 or args.queries is not None and args.queries < 1:
        parser.error("--size and --queries must be positive")
    return parser, args


def library_baselines(workspace, corpus, queries, record_ids, qrels_list, runs) -> dict:
    """The plain-library baselines over the same abstracts and queries: bm25s three ways, exact
    cosine over the stored vectors, their RRF and their min-max mix. Each ranking also goes into
    ``runs`` (by name), beside the configurations'."""
    qids = [qid for qid, _ in queries]
    baselines = {}
    texts = [record_text(doc) for doc in corpus]
    query_texts = [text for _, text in queries]
    ids = [doc["id"] for doc in corpus]
    plain, plain_s = bm25s_plain(texts, query_texts, K)
    stemmed, stemmed_s = bm25s_stemmed(texts, query_texts, K)
    en, en_s = bm25s_en(texts, query_texts, K)
    matrix = stored_embeddings(workspace, record_ids)
    encode_started = time.perf_counter()
    query_matrix = query_vectors(workspace, query_texts, desc="query vectors (brute force)")
    brute = brute_force(matrix, query_matrix, K)
    brute_s = time.perf_counter() - encode_started
    library = {
        "bm25s_plain": ("bm25s, bm25_v1 tokens (no stemming/stopwords), k1 1.2, b 0.75", plain, plain_s),
        "bm25s_stemmed": ("bm25s, PyStemmer English + English stopwords, k1 0.9, b 0.4 (data README)", stemmed,
                          stemmed_s),
        "bm25s_en": ("bm25s, PyStemmer English + English stopwords, k1 1.2, b 0.75, Lucene (bm25_en's setup)",
                     en, en_s),
        "brute_force": ("exact cosine over the stored MiniLM vectors (numpy)", brute, brute_s),
    }
    for name, (label, ranked_idx, seconds) in library.items():
        ranked = {qid: [ids[i] for i in r] for qid, r in zip(qids, ranked_idx)}
        runs[name] = ranked
        baselines[name] = {"label": label, "seconds": round(seconds, 2), **evaluate(ranked, qrels_list, qids)}
    for name, constant in (("rrf_library", RRF_CONSTANT), ("rrf_library_c10", 10)):
        fused = {qid: rrf([runs["bm25s_plain"][qid], runs["brute_force"][qid]], constant, K) for qid in qids}
        runs[name] = fused
        baselines[name] = {"label": f"RRF ({constant}) of bm25s_plain and brute_force top-100, in Python",
                           "seconds": round(plain_s + brute_s, 2), **evaluate(fused, qrels_list, qids)}
    mix_started = time.perf_counter()
    mixed = minmax_mix([(0.4, bm25s_plain_scores(texts, query_texts)), (0.6, query_matrix @ matrix.T)], K)
    ranked = {qid: [ids[i] for i in r] for qid, r in zip(qids, mixed)}
    baselines["mix_library"] = {
        "label": ".4 min-max(bm25s_plain) + .6 min-max(cosine) over every abstract (numpy)",
        "seconds": round(time.perf_counter() - mix_started + brute_s, 2), **evaluate(ranked, qrels_list, qids)}
    return baselines


def compare(result, runs, configurations, baselines, qids) -> None:
    """Into ``result``: the configurations and baselines, and how the service's rankings agree with
    the libraries' (HNSW's loss against exact cosine, bm25 / bm25_en against bm25s)."""
    result["configurations"] = configurations
    result["baselines"] = baselines
    result["baseline_of"] = {name: base for name, base in BASELINE_OF.items() if name in configurations}
    result["hnsw"] = hnsw_loss(runs, configurations, baselines, qids)
    if "bm25_en" in runs:
        result["bm25_en_agreement"] = {"overlap_at_100": overlap_at(runs["bm25_en"], runs["bm25s_en"], qids, 100),
                                       "overlap_at_10": overlap_at(runs["bm25_en"], runs["bm25s_en"], qids, 10)}
    if "bm25" in runs:
        result["bm25_agreement"] = {"overlap_at_100": overlap_at(runs["bm25"], runs["bm25s_plain"], qids, 100),
                                    "overlap_at_10": overlap_at(runs["bm25"], runs["bm25s_plain"], qids, 10)}


def intervals(result, configurations, baselines, qids) -> None:
    """Into ``result``: each query's nDCG@10 by configuration and baseline, and the paired bootstrap
    intervals against the default configuration and, per runtime, against the same configuration on
    the process's runtime."""
    per_query = {name: entry.pop("per_query_ndcg10") for name, entry in (*configurations.items(), *baselines.items())}
    result["per_query"] = {"qids": qids, "nDCG@10": {name: [round(values[qid], 4) for qid in qids]
                                                     for name, values in per_query.items()}}
    if DEFAULT_CONFIGURATION in configurations:
        default = [per_query[DEFAULT_CONFIGURATION][qid] for qid in qids]
        result["paired_bootstrap"] = {
            "against": DEFAULT_CONFIGURATION, "measure": "nDCG@10", "resamples": 2000, "seed": 0,
            "differences": {name: paired_bootstrap([per_query[name][qid] for qid in qids], default)
                            for name in configurations if name != DEFAULT_CONFIGURATION}}
    comparison = runtime_differences(per_query, qids, "nDCG@10")
    if comparison:
        result["runtime_bootstrap"] = comparison


def result_head(args, data, judgements, started_at, env) -> dict:
    """The result's description of the run: data, settings, environment."""
    corpus, queries = data["corpus"], data["queries"]
    return {"benchmark": "scifact", "started_at": started_at, "environment": env,
            "data": {"path": str(args.data), "split": args.qrels, "documents": len(corpus), "queries": len(queries),
                     "judgements": judgements, "size_limit": args.size, "query_limit": args.queries,
                     "files": data["files"], "record_text": "title + '\\n' + abstract",
                     "license": "SciFact CC BY-NC 2.0 (see the data README)"},
            "settings": {"k": K, "TOUCH_ON_READ": False, "bm25_candidates": 1000, "rrf_rank_constant": RRF_CONSTANT,
                         "gunicorn_workers": args.workers, "api_clients": args.workers,
                         "torch_threads_per_worker": args.torch_threads,
                         "catalog": str(CATALOG.relative_to(ROOT))}}


def rank_sweep(workspace, queries, doc_of, qrels_list, path: Path) -> None:
    """``--sweep``: hybrid rank formulas over the service's pools (``bench/rank_sweep.py``), by nDCG@10."""
    qids = [qid for qid, _ in queries]

    def ndcg10(ranked: dict) -> float:
        docs = {qid: [doc_of[r] for r in ids] for qid, ids in ranked.items()}
        return evaluate(docs, qrels_list, qids)["metrics"]["nDCG@10"]

    write_json(path, sweep(workspace, [(qid, text, SCOPE) for qid, text in queries], k=K, score=ndcg10,
                           metric="nDCG@10"))


def main(argv=None) -> int:
    parser, args = _arguments(argv)

    selected, elsewhere = by_runtime(selected_configurations(parser, CONFIGURATIONS, args.configs))

    started, started_at, env = begin_run()
    data = load_data(args.data, args.qrels, args.size, args.queries)
    load_s = time.perf_counter() - started
    corpus, queries, qrels = data["corpus"], data["queries"], data["qrels"]
    if not queries:
        raise SystemExit("no query has a judged document in the selected corpus")
    log(f"SciFact: {len(corpus)} abstracts, {len(queries)} queries ({args.qrels}), "
        f"{sum(len(v) for v in qrels.values())} judgements")
    qids = [qid for qid, _ in queries]
    import ir_measures

    qrels_list = [ir_measures.Qrel(qid, did, rel) for qid, docs in qrels.items() for did, rel in docs.items()]
    timings = {"load_s": load_s}
    result = result_head(args, data, len(qrels_list), started_at, env)
    configurations = {}
    with bench_workspace("scifact", CATALOG, keep=args.keep, workers=args.workers,
                         torch_threads=args.torch_threads) as bench:
        record_ids, timings["ingest_s"] = ingest(bench.api, record_items(corpus), desc="POST /records",
                                                 clients=args.workers)
        timings["ready_s"] = wait_ready(bench.workspace, len(corpus))
        doc_of = dict(zip(record_ids, (doc["id"] for doc in corpus)))
        questions = [(qid, text, None) for qid, text in queries]
        if args.sweep:
            rank_sweep(bench.workspace, queries, doc_of, qrels_list, args.out / "scifact_sweep.json")
        runs = {}
        query_started = time.perf_counter()
        for config in selected:
            run = run_configuration(bench.api, config, questions, workers=args.workers)
            ranked = {qid: [doc_of[r] for r in ids] for qid, ids in run.ranked.items()}
            runs[config.name] = ranked
            configurations[config.name] = {**config.describe(), "latency": run.latency(),
                                           **evaluate(ranked, qrels_list, qids)}
        timings["queries_s"] = time.perf_counter() - query_started

        baseline_started = time.perf_counter()
        baselines = library_baselines(bench.workspace, corpus, queries, record_ids, qrels_list, runs)
        timings["baselines_s"] = time.perf_counter() - baseline_started
        cleanup_started = time.perf_counter()
    timings["cleanup_s"] = time.perf_counter() - cleanup_started
    if elsewhere:  # NAME@RUNTIME on another runtime: the same abstracts in a workspace of its own
        other_runs, result["runtimes"] = run_on_runtimes(
            "scifact", CATALOG, record_items(corpus), [doc["id"] for doc in corpus],
            [(qid, text, None) for qid, text in queries], elsewhere, keep=args.keep, workers=args.workers,
            torch_threads=args.torch_threads)
        for config in (c for configs in elsewhere.values() for c in configs):
            runs[config.name] = other_runs[config.name].ranked
            configurations[config.name] = {**config.describe(), "latency": other_runs[config.name].latency(),
                                           **evaluate(runs[config.name], qrels_list, qids)}

    compare(result, runs, configurations, baselines, qids)
    result["targets"] = targets(configurations)
    result["tried"] = TRIED
    result["reference"] = [
        "BM25 Anserini flat 0.6789 nDCG@10 (R@100 0.9253); multifield 0.6647 (R@100 0.9076); BEIR paper 0.665.",
        "all-MiniLM-L6-v2 (MTEB) 0.64508 nDCG@10, R@100 0.925.",
        "bm25s 0.3.16 with PyStemmer + stopwords, k1 0.9, b 0.4: 0.6762 nDCG@10, R@100 0.9127 (data README).",
    ]
    timings["total_s"] = time.perf_counter() - started
    intervals(result, configurations, baselines, qids)
    result["timings"] = {key: round(value, 2) for key, value in timings.items()}
    args.out.mkdir(parents=True, exist_ok=True)
    rows = [{"name": name, **entry} for name, entry in configurations.items()]
    rows += [{"name": name, "baseline": True, **entry} for name, entry in baselines.items()]
    result["plots"] = plots(args.out, args.name, rows, f"SciFact ({args.qrels}, {len(queries)} queries)")
    harness.publish(result, out=args.out, name=args.name, report=markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
