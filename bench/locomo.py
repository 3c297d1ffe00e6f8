#!/usr/bin/env python
"""Evidence recall on LoCoMo conversations, through the public API, beside DRAGON and baselines.

    python bench/locomo.py [--data FILE] [--out DIR] [--size N] [--format said|dated|plain] [--keep]
    python -m bench locomo [same options]

1. A fresh workspace gets ``bench/catalogs/locomo`` (event collection ``turns`` with a required
   MiniLM embedding processor, and the RRF view ``turns_rrf``).
2. Each conversation is one entity (``locomo.<sample_id>``); each dialog turn is one record
   written through ``POST /records``: ``occurred_at`` is its session's date_time ("1:56 pm on
   8 May, 2023" read as UTC), content holds ``dia_id``, ``speaker``, ``session``,
   ``session_date`` and ``blip_caption``, and ``dedupe_key`` is ``<sample_id>:<dia_id>``. The
   record text (``--format``) is the LoCoMo paper's dialog retrieval unit: ``dated`` (the
   default, the paper's exact unit) = ``(<session date_time>) <speaker> said, "<text>"`` plus
   `` [shares <blip_caption>]`` for image turns; ``said`` = the same without the date prefix;
   ``plain`` = ``<speaker>: <text>`` plus the caption. ``dated`` was chosen on this dev split
   (the data README's tuning split): it helps every configuration (see bench/README.md).
3. Every question is asked through the API, scoped to its conversation's entity, in each
   configuration (``CONFIGURATIONS``) with k = 50.
4. Baselines per conversation, same run, same texts: bm25s with bm25_v1's tokenisation,
   bm25s with the PyStemmer setup, exact brute-force cosine over the stored vectors, and RRF
   (60) of the first and third in Python.

Metric: the LoCoMo paper's evidence recall (task_eval/evaluation.py, as the data README
defines it). For each question, the fraction of its evidence dia_ids that appear among the
top k retrieved turns; a question without evidence counts as 1; means per category and over
all questions (adversarial included). Evidence strings that hold several ids ("D8:6; D9:17",
space-joined lists) are split; ids that match no turn ("D", "D:11:26", "D10:19") stay in the
denominator and can never be found; a repeated id counts each time it is listed. This differs
from ir_measures' R@k (which collapses repeats and drops questions without judgements), so the
README's recall is computed here exactly; ir_measures' R@10 and nDCG@10 over the questions
with at least one matched evidence turn are reported beside it.

Writes ``locomo.json``, ``locomo.md``, ``locomo.png`` (recall@k per configuration with the
DRAGON points) and ``locomo_categories.png`` (recall@10 per category) to ``--out``.
``--size N`` uses only the first N conversations. ``--configs NAME@RUNTIME`` (e.g.
``example@onnx-int8``) asks NAME of a second workspace whose turns and questions embed with that
runtime (the same turns ingested again), and reports it against NAME on the process's runtime
(``EMBEDDING_RUNTIME``, torch by default) with paired bootstrap intervals, overall and per category.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import harness  # noqa: E402
from bench.quality_common import (ROOT, Configuration, add_configs_argument, begin_run, bench_workspace,  # noqa: E402
                                  bm25s_plain, bm25s_stemmed, brute_force, by_runtime, environment_line, ingest,
                                  ir_metrics, ir_run, log, markdown_table, paired_bootstrap, query_vectors, rrf,
                                  run_configuration, run_on_runtimes, runtime_differences, runtime_markdown,
                                  selected_configurations, sha256_of, stored_embeddings, wait_ready, write_json)
from bench.rank_sweep import example_hybrid_rank, sweep, with_stemmed_bm25  # noqa: E402

DEFAULT_DATA = Path("/work/shared/bench/locomo/locomo-dev.json")
CATALOG = ROOT / "bench" / "catalogs" / "locomo"
K = 50
CUTOFFS = (5, 10, 25, 50)
RRF_CONSTANT = 60
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
DRAGON = {"5": 56.7, "10": 66.2, "25": 76.7, "50": 82.7}  # LoCoMo paper Table 3, all ten conversations
TARGET_CUTOFF, TARGET = "10", 66.2
SCOPE = {"collections": ["turns"], "entities": ["{entity}"]}
FORMATS = ("said", "dated", "plain")

CONFIGURATIONS = [
    Configuration("text", "text mode, default rank (ts_rank_cd)", "search",
                  {"q": "{q}", "mode": "text", "scope": SCOPE, "k": K}, group="lexical"),
    Configuration("bm25", "text mode ranked by [bm25], candidates 1000", "search",
                  {"q": "{q}", "mode": "text", "scope": SCOPE, "rank": ["bm25"], "params": {"candidates": 1000},
                   "k": K}, group="lexical"),
    Configuration("vector", "vector mode, default rank (MiniLM)", "search",
                  {"q": "{q}", "mode": "vector", "scope": SCOPE, "k": K}, group="vector"),
    Configuration("hybrid", "hybrid mode, default rank", "search",
                  {"q": "{q}", "mode": "hybrid", "scope": SCOPE, "k": K}, group="fused"),
    Configuration("example", "hybrid mode, the example catalog's default rank", "search",
                  {"q": "{q}", "mode": "hybrid", "scope": SCOPE, "rank": example_hybrid_rank(), "k": K}, group="fused",
                  note="what GET /search ranks with in a workspace that loaded fixtures/catalogs/example"),
    Configuration("rrf", "view turns_rrf: RRF(bm25, vector), constant 60", "view",
                  {"q": "{q}", "entity": "{entity}", "k": K}, view="turns_rrf", group="fused"),
    Configuration("rrf_c10", "view turns_rrf_c10: RRF(bm25, vector), constant 10 (tuned)", "view",
                  {"q": "{q}", "entity": "{entity}", "k": K}, view="turns_rrf_c10", group="fused",
                  extra=True),
    Configuration("rrf3", "view turns_rrf3: RRF(text_match, bm25, vector), constant 10 (tuned)", "view",
                  {"q": "{q}", "entity": "{entity}", "k": K}, view="turns_rrf3", group="fused",
                  extra=True),
    Configuration("mix", "view turns_mix: hybrid, .25 bm25 + .25 text_match + .5 similarity (tuned)", "view",
                  {"q": "{q}", "entity": "{entity}", "k": K}, view="turns_mix", group="fused"),
    Configuration("bm25_en", "text mode ranked by [bm25_en] (stemmed English, en_v1), candidates 1000", "search",
                  {"q": "{q}", "mode": "text", "scope": SCOPE, "rank": ["bm25_en"], "params": {"candidates": 1000},
                   "k": K}, group="lexical", extra=True),
    Configuration("example_en", "hybrid mode, the example catalog's default rank with bm25_en for bm25", "search",
                  {"q": "{q}", "mode": "hybrid", "scope": SCOPE, "rank": with_stemmed_bm25(example_hybrid_rank()),
                   "k": K}, group="fused", extra=True),
]

# What was tried to reach DRAGON's recall@10, on this dev split (the data README's tuning
# split): offline over the service's own signals (bm25s with bm25_v1 tokens = exact BM25,
# PostgreSQL ts_rank_cd as the engine computes text_match, the MiniLM vectors), then through
# the API on a kept workspace; the chosen settings are the views turns_rrf_c10, turns_rrf3,
# turns_mix and the default --format dated.
TRIED = [
    "The RRF view as specified (bm25 + vector, 100 per source, constant 60) reaches 58.7 recall@10: with "
    "100-deep lists over ~550 turns, turns both lists hold at middling ranks outrank either list's best. "
    "Rank constant 5/10/20/60 x depth 25/50/100: constant 10 gives 65.8-66.1 (API: 65.8 with --format said), "
    "depth matters little once the constant is small.",
    "A third source, PostgreSQL full-text (English stemming and stopwords, ts_rank_cd), adds 1.5-2 points "
    "(turns_rrf3, constant 10: 67.3 through the API with --format said).",
    "Hybrid mode with one rank expression, a convex mix of min-max normalised signals: bm25 + similarity only "
    "(0.4/0.6) 65.4; 0.3 bm25 + 0.1 text_match + 0.6 similarity 67.4; 0.25 bm25 + 0.25 text_match + 0.5 "
    "similarity 68.8 (all through the API, --format said); the last is turns_mix.",
    "Record text formats (offline, recall@10 of bm25 / vector / rrf3 / mix): said 56.3 / 50.4 / 67.7 / 68.9, "
    "dated (the paper's unit, with the session date) 58.6 / 50.9 / 70.5 / 70.3, plain 56.2 / 47.4 / 67.4 / 67.4. "
    "dated is the default.",
    "The hybrid mode's default rank, normalize(max(similarity, text_match)), mixes an unbounded ts_rank_cd "
    "with a cosine below 1; an engine default, left unchanged and reported.",
]


# --------------------------------------------------------------------------------------------
# Data


def parse_session_date(value: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` → 2023-05-08T13:56:00Z (the data carries no timezone)."""
    return datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def split_evidence(evidence: list) -> list[str]:
    """Evidence ids as listed, with multi-id strings ("D8:6; D9:17", "D1:2 D1:3") split."""
    out = []
    for item in evidence or []:
        out += [part for part in re.split(r"[;,\s]+", str(item)) if part]
    return out


def turn_text(turn: dict, date_time: str, style: str) -> str:
    caption = f" [shares {turn['blip_caption']}]" if turn.get("blip_caption") else ""
    if style == "plain":
        return f"{turn['speaker']}: {turn['text']}{caption}"
    said = f"{turn['speaker']} said, \"{turn['text']}\"{caption}"
    return f"({date_time}) {said}" if style == "dated" else said


def load_data(path: Path, size: int | None, style: str) -> dict:
    samples = json.loads(path.read_text(encoding="utf-8"))
    if size is not None:
        samples = samples[:size]
    turns, questions = [], []
    for sample in samples:
        sid = sample["sample_id"]
        entity = f"locomo.{sid}"
        conversation = sample["conversation"]
        sessions = sorted((int(key.split("_")[1]) for key in conversation
                           if re.fullmatch(r"session_\d+", key) and isinstance(conversation[key], list)))
        for number in sessions:
            date_time = conversation[f"session_{number}_date_time"]
            occurred = parse_session_date(date_time)
            for turn in conversation[f"session_{number}"]:
                content = {"dia_id": turn["dia_id"], "speaker": turn["speaker"], "conversation": sid,
                           "session": number, "session_date": date_time}
                if turn.get("blip_caption"):
                    content["blip_caption"] = turn["blip_caption"]
                turns.append({"sample": sid, "dia_id": turn["dia_id"], "item": {
                    "entity": entity, "collection": "turns", "type": "turn", "text": turn_text(turn, date_time, style),
                    "content": content, "occurred_at": occurred.isoformat(), "dedupe_key": f"{sid}:{turn['dia_id']}"}})
        for index, qa in enumerate(sample["qa"]):
            questions.append({"qid": f"{sid}#{index}", "sample": sid, "entity": entity, "question": qa["question"],
                              "category": int(qa["category"]), "evidence": split_evidence(qa.get("evidence"))})
    return {"samples": [s["sample_id"] for s in samples], "turns": turns, "questions": questions,
            "file": {"bytes": path.stat().st_size, "sha256": sha256_of(path)}}


# --------------------------------------------------------------------------------------------
# Metrics


def evidence_recall(retrieved: list[str], evidence: list[str], k: int) -> float:
    """The LoCoMo paper's recall: share of listed evidence ids among the top k; none listed → 1."""
    if not evidence:
        return 1.0
    top = set(retrieved[:k])
    return sum(1 for ev in evidence if ev in top) / len(evidence)


def evaluate(ranked: dict[str, list[str]], questions: list[dict], known: dict[str, set]) -> dict:
    import ir_measures
    from ir_measures import R, nDCG

    recall = {}
    for cutoff in CUTOFFS:
        per_question = {q["qid"]: evidence_recall(ranked.get(q["qid"], []), q["evidence"], cutoff) for q in questions}
        by_category = {}
        for number, name in CATEGORIES.items():
            values = [per_question[q["qid"]] for q in questions if q["category"] == number]
            by_category[f"{number} {name}"] = 100 * sum(values) / len(values) if values else None
        recall[str(cutoff)] = {"overall": 100 * sum(per_question.values()) / len(per_question),
                               "categories": by_category}
        if cutoff == 10:
            at10 = per_question
    # ir_measures over questions with at least one evidence id that names a real turn.
    qrels = [ir_measures.Qrel(q["qid"], ev, 1) for q in questions
             for ev in dict.fromkeys(q["evidence"]) if ev in known[q["sample"]]]
    judged = sorted({qrel.query_id for qrel in qrels})
    aggregate, _ = ir_metrics([R @ 10, nDCG @ 10], qrels, ir_run(ranked, judged))
    return {"recall": recall, "ir_measures": {"questions": len(judged), "R@10": aggregate["R@10"],
                                              "nDCG@10": aggregate["nDCG@10"]},
            "per_question_recall10": at10}


# --------------------------------------------------------------------------------------------
# Output


def plots(out: Path, stem: str, rows: list[dict], title: str) -> list[str]:
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(7, 4.8))
    for row in rows:
        style = "--" if row.get("baseline") else "-"
        ax.plot(CUTOFFS, [row["recall"][str(c)]["overall"] for c in CUTOFFS], style, marker="o", label=row["name"])
    ax.plot(CUTOFFS, [DRAGON[str(c)] for c in CUTOFFS], "k*", markersize=11, label="DRAGON (paper, 10 conv.)")
    ax.set_xticks(CUTOFFS, [str(c) for c in CUTOFFS])
    ax.set_xlabel("k (retrieved turns)")
    ax.set_ylabel("evidence recall@k (%)")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    first = out / f"{stem}.png"
    fig.savefig(first, dpi=120)
    plt.close(fig)

    labels = [f"{n} {name}" for n, name in CATEGORIES.items()] + ["overall"]
    x = np.arange(len(labels))
    width = 0.8 / max(1, len(rows))
    fig, ax = plt.subplots(figsize=(10, 4.8))
    for index, row in enumerate(rows):
        at10 = row["recall"]["10"]
        values = [at10["categories"][label] or 0 for label in labels[:-1]] + [at10["overall"]]
        ax.bar(x - 0.4 + width * (index + 0.5), values, width, label=row["name"])
    ax.axhline(TARGET, color="black", linestyle=":", linewidth=0.8, label=f"DRAGON overall {TARGET}")
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_ylabel("evidence recall@10 (%)")
    ax.set_ylim(0, 105)
    ax.set_title(f"{title}: recall@10 by category", fontsize=10)
    ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    second = out / f"{stem}_categories.png"
    fig.savefig(second, dpi=120)
    plt.close(fig)
    return [first.name, second.name]


def markdown(result: dict) -> str:
    data = result["data"]
    lines = [f"# LoCoMo evidence recall ({len(data['conversations'])} conversations)", "",
             f"{data['questions']} questions over {data['turns']} turns ({', '.join(data['conversations'])}); "
             f"record text format `{data['format']}`; every question through the public API, scoped to its "
             f"conversation's entity, k = {K}. Recall is the LoCoMo paper's evidence recall (see the docstring of "
             f"`bench/locomo.py`), in percent. Started {result['started_at']}; "
             f"{environment_line(result['environment'])}.", "",
             "## Overall recall@k", ""]
    header = ["config", "what", *(f"R@{c}" for c in CUTOFFS), "R@10 ratio to baseline", "ir_measures R@10",
              "nDCG@10", "mean ms"]
    rows = []
    for name, entry in {**result["configurations"], **result["baselines"]}.items():
        mean_ms = entry["latency"]["mean_ms"] if "latency" in entry else 1000 * entry["seconds"] / data["questions"]
        base = result["baseline_of"].get(name)
        ratio = "–"
        if base:
            ratio = f"{entry['recall']['10']['overall'] / result['baselines'][base]['recall']['10']['overall']:.3f}" \
                    f" × `{base}`"
        rows.append([f"`{name}`", entry["label"], *(f"{entry['recall'][str(c)]['overall']:.1f}" for c in CUTOFFS),
                     ratio, entry["ir_measures"]["R@10"], entry["ir_measures"]["nDCG@10"], f"{mean_ms:.1f}"])
    rows.append(["DRAGON", "LoCoMo paper Table 3 (all ten conversations)", *(f"{DRAGON[str(c)]:.1f}" for c in CUTOFFS),
                 None, None, None, None])
    lines.append(markdown_table(header, rows))
    lines += ["", "## Recall@10 by category", ""]
    labels = [f"{n} {name}" for n, name in CATEGORIES.items()]
    counts = data["questions_per_category"]
    header = ["config", *(f"{label} ({counts[label]})" for label in labels), "overall"]
    rows = [[f"`{name}`", *(f"{v:.1f}" if v is not None else None
                           for v in (entry["recall"]["10"]["categories"][label] for label in labels)),
             f"{entry['recall']['10']['overall']:.1f}"]
            for name, entry in {**result["configurations"], **result["baselines"]}.items()]
    lines.append(markdown_table(header, rows))
    comparison = result.get("runtime_bootstrap")
    lines += runtime_markdown(comparison, ", in points")
    if comparison:
        lines += ["", "Recall@10 by category, difference to the same configuration on "
                  f"{comparison['against_runtime']} (points, paired bootstrap 95% interval):", ""]
        header = ["config", *(f"{label} ({counts[label]})" for label in labels)]
        rows = [[f"`{name}`", *(f"{d['mean']:+.2f} [{d['low']:+.2f}, {d['high']:+.2f}]"
                               for d in (diff["categories"][label] for label in labels))]
                for name, diff in comparison["differences"].items()]
        lines.append(markdown_table(header, rows))
    lines += ["", "## Target", ""]
    target = result["target"]
    lines.append(f"- Evidence recall@10 of the best configuration (`{target['config']}`): {target['value']:.1f} vs "
                 f"DRAGON {TARGET}: {'met' if target['met'] else 'missed'} ({target['margin']:+.1f} points). "
                 "DRAGON's figure covers all ten conversations; these are the five of the dev split.")
    if result.get("tried"):
        lines += ["", "What was tried:", ""] + [f"- {item}" for item in result["tried"]]
    timings = result["timings"]
    lines += ["", "## Run time", "",
              f"- Total {timings['total_s']:.0f} s: data {timings['load_s']:.1f} s, ingest {timings['ingest_s']:.1f} s "
              f"({data['turns'] / max(timings['ingest_s'], 1e-9):.1f} records/s through POST /records, embedding "
              f"included), waiting for ready {timings['ready_s']:.1f} s, service queries {timings['queries_s']:.1f} s, "
              f"baselines {timings['baselines_s']:.1f} s, cleanup {timings.get('cleanup_s', 0):.1f} s.",
              "", f"Plots: {', '.join(f'`{p}`' for p in result['plots'])}. Settings: {json.dumps(result['settings'])}."]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------


def _arguments(argv):
    """The parser and the parsed options of a run."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"LoCoMo-format JSON (default {DEFAULT_DATA})")
    harness.add_out_argument(parser)
    parser.add_argument("--size", type=int, default=None, help="use only the first N conversations")
    parser.add_argument("--format", choices=FORMATS, default="dated", help="record text format (default dated)")
    add_configs_argument(parser, CONFIGURATIONS)
    parser.add_argument("--keep", action="store_true", help="keep the workspace (prints its name and key)")
    parser.add_argument("--sweep", action="store_true",
                        help="also sweep hybrid rank formulas over the service's pools (bench/rank_sweep.py)")
    parser.add_argument("--name", default="locomo", help="output file stem (default locomo)")
    parser.add_argument("--workers", type=int, default=2,
                        help="gunicorn workers, and as many concurrent API clients (default 2: one per core)")
    parser.add_argument("--torch-threads", type=int, default=1,
                        help="torch intra-op threads of each gunicorn worker (default 1: the workers share the cores)")
    args = parser.parse_args(argv)
    if args.size is not None and args.size < 1:
        parser.error("--size must be positive")
    return parser, args


def result_head(args, data, started_at, env) -> tuple[dict, dict]:
    """Each conversation's turn ids (``known``) and the result's description of the run: data,
    settings, environment."""
    turns, questions = data["turns"], data["questions"]
    known = {}
    for turn in turns:
        known.setdefault(turn["sample"], set()).add(turn["dia_id"])
    per_category = {f"{n} {name}": sum(1 for q in questions if q["category"] == n) for n, name in CATEGORIES.items()}
    result = {"benchmark": "locomo", "started_at": started_at, "environment": env,
              "data": {"path": str(args.data), "file": data["file"], "conversations": data["samples"],
                       "turns": len(turns), "questions": len(questions), "questions_per_category": per_category,
                       "questions_without_evidence": sum(1 for q in questions if not q["evidence"]),
                       "evidence_ids_matching_no_turn": sorted({f"{q['sample']}:{ev}" for q in questions
                                                                for ev in q["evidence"]
                                                                if ev not in known.get(q["sample"], set())}),
                       "format": args.format, "size_limit": args.size,
                       "license": "LoCoMo CC BY-NC 4.0 (see the data README)"},
              "settings": {"k": K, "TOUCH_ON_READ": False, "bm25_candidates": 1000, "rrf_rank_constant": RRF_CONSTANT,
                           "gunicorn_workers": args.workers, "api_clients": args.workers,
                           "torch_threads_per_worker": args.torch_threads,
                           "catalog": str(CATALOG.relative_to(ROOT))}}
    return known, result


def rank_sweep(workspace, questions, known, dia_of, path: Path) -> None:
    """``--sweep``: hybrid rank formulas over the service's pools (``bench/rank_sweep.py``), by
    evidence recall@10."""
    def recall10(ranked: dict) -> float:
        turns_of = {qid: [dia_of[r] for r in ids] for qid, ids in ranked.items()}
        return evaluate(turns_of, questions, known)["recall"]["10"]["overall"]

    scoped = [(q["qid"], q["question"], {"collections": ["turns"], "entities": [q["entity"]]}) for q in questions]
    write_json(path, sweep(workspace, scoped, k=K, score=recall10, metric="evidence recall@10"))


def library_baselines(workspace, data, record_ids, known, runs) -> dict:
    """The plain-library baselines, per conversation over its own turns: bm25s plain and stemmed,
    exact cosine over the stored vectors, and their RRF. Each ranking also goes into ``runs``."""
    turns, questions = data["turns"], data["questions"]
    baselines = {}
    all_vectors = dict(zip(record_ids, stored_embeddings(workspace, record_ids)))
    query_matrix = dict(zip((q["qid"] for q in questions),
                            query_vectors(workspace, [q["question"] for q in questions],
                                          desc="query vectors (brute force)")))
    library = {"bm25s_plain": {}, "bm25s_stemmed": {}, "brute_force": {}}
    seconds = {name: 0.0 for name in library}
    import numpy as np

    for sample in data["samples"]:
        members = [(rid, t) for rid, t in zip(record_ids, turns) if t["sample"] == sample]
        texts = [t["item"]["text"] for _, t in members]
        dia_ids = [t["dia_id"] for _, t in members]
        asked_here = [q for q in questions if q["sample"] == sample]
        if not asked_here:
            continue
        query_texts = [q["question"] for q in asked_here]
        plain, plain_s = bm25s_plain(texts, query_texts, K, desc=f"bm25s plain {sample}")
        stemmed, stemmed_s = bm25s_stemmed(texts, query_texts, K, desc=f"bm25s stemmed {sample}")
        started_brute = time.perf_counter()
        brute = brute_force(np.stack([all_vectors[rid] for rid, _ in members]),
                            np.stack([query_matrix[q["qid"]] for q in asked_here]), K)
        seconds["brute_force"] += time.perf_counter() - started_brute
        seconds["bm25s_plain"] += plain_s
        seconds["bm25s_stemmed"] += stemmed_s
        for name, ranked_idx in (("bm25s_plain", plain), ("bm25s_stemmed", stemmed), ("brute_force", brute)):
            for q, idx in zip(asked_here, ranked_idx):
                library[name][q["qid"]] = [dia_ids[i] for i in idx]
    labels = {"bm25s_plain": "bm25s, bm25_v1 tokens (no stemming/stopwords), k1 1.2, b 0.75",
              "bm25s_stemmed": "bm25s, PyStemmer English + English stopwords, k1 0.9, b 0.4",
              "brute_force": "exact cosine over the stored MiniLM vectors (numpy)"}
    for name, ranked in library.items():
        runs[name] = ranked
        baselines[name] = {"label": labels[name], "seconds": round(seconds[name], 2),
                           **evaluate(ranked, questions, known)}
    for name, constant in (("rrf_library", RRF_CONSTANT), ("rrf_library_c10", 10)):
        fused = {q["qid"]: rrf([library["bm25s_plain"].get(q["qid"], []),
                                library["brute_force"].get(q["qid"], [])], constant, K) for q in questions}
        baselines[name] = {"label": f"RRF ({constant}) of bm25s_plain and brute_force, in Python",
                           "seconds": round(seconds["bm25s_plain"] + seconds["brute_force"], 2),
                           **evaluate(fused, questions, known)}
    return baselines


def compare(result, configurations, baselines, questions) -> None:
    """Into ``result``: the configurations and baselines, the target against DRAGON, each
    question's recall@10 and, per runtime, the paired bootstrap against the process's runtime
    (overall and by category)."""
    result["configurations"] = configurations
    result["baselines"] = baselines
    result["baseline_of"] = {"text": "bm25s_stemmed", "bm25": "bm25s_plain", "vector": "brute_force",
                             "hybrid": "rrf_library", "rrf": "rrf_library", "rrf_c10": "rrf_library_c10",
                             "rrf3": "rrf_library_c10", "mix": "rrf_library_c10"}
    best = max(configurations, key=lambda name: configurations[name]["recall"][TARGET_CUTOFF]["overall"])
    value = configurations[best]["recall"][TARGET_CUTOFF]["overall"]
    result["target"] = {"name": "evidence recall@10 of the best configuration vs DRAGON", "config": best,
                        "value": value, "target": TARGET, "met": value >= TARGET, "margin": value - TARGET}
    result["dragon"] = {"source": "LoCoMo paper (ACL 2024) Table 3, DRAGON over dialog turns, all ten conversations",
                        "recall": DRAGON}
    result["tried"] = TRIED
    qids = [q["qid"] for q in questions]
    per_question = {name: entry.pop("per_question_recall10")
                    for name, entry in (*configurations.items(), *baselines.items())}
    result["per_question"] = {"qids": qids, "recall@10": {name: [round(values[qid], 4) for qid in qids]
                                                          for name, values in per_question.items()}}
    comparison = runtime_differences(per_question, qids, "evidence recall@10", scale=100.0)
    if comparison:
        for name, diff in comparison["differences"].items():
            diff["categories"] = {
                f"{number} {label}": paired_bootstrap(
                    [100 * per_question[name][q["qid"]] for q in questions if q["category"] == number],
                    [100 * per_question[diff["against"]][q["qid"]] for q in questions if q["category"] == number])
                for number, label in CATEGORIES.items()}
        result["runtime_bootstrap"] = comparison


def main(argv=None) -> int:
    parser, args = _arguments(argv)

    selected, elsewhere = by_runtime(selected_configurations(parser, CONFIGURATIONS, args.configs))

    started, started_at, env = begin_run()
    data = load_data(args.data, args.size, args.format)
    timings = {"load_s": time.perf_counter() - started}
    turns, questions = data["turns"], data["questions"]
    log(f"LoCoMo: {len(data['samples'])} conversations, {len(turns)} turns, {len(questions)} questions")
    known, result = result_head(args, data, started_at, env)
    configurations = {}
    with bench_workspace("locomo", CATALOG, keep=args.keep, workers=args.workers,
                         torch_threads=args.torch_threads) as bench:
        record_ids, timings["ingest_s"] = ingest(bench.api, [t["item"] for t in turns], desc="POST /records",
                                                 clients=args.workers)
        timings["ready_s"] = wait_ready(bench.workspace, len(turns))
        dia_of = {rid: turn["dia_id"] for rid, turn in zip(record_ids, turns)}
        asked = [(q["qid"], q["question"], q["entity"]) for q in questions]
        if args.sweep:
            rank_sweep(bench.workspace, questions, known, dia_of, args.out / "locomo_sweep.json")
        runs = {}
        query_started = time.perf_counter()
        for config in selected:
            run = run_configuration(bench.api, config, asked, workers=args.workers)
            ranked = {qid: [dia_of[r] for r in ids] for qid, ids in run.ranked.items()}
            runs[config.name] = ranked
            configurations[config.name] = {**config.describe(), "latency": run.latency(),
                                           **evaluate(ranked, questions, known)}
        timings["queries_s"] = time.perf_counter() - query_started

        baseline_started = time.perf_counter()
        baselines = library_baselines(bench.workspace, data, record_ids, known, runs)
        timings["baselines_s"] = time.perf_counter() - baseline_started
        cleanup_started = time.perf_counter()
    timings["cleanup_s"] = time.perf_counter() - cleanup_started
    if elsewhere:  # NAME@RUNTIME on another runtime: the same turns in a workspace of its own
        other_runs, result["runtimes"] = run_on_runtimes(
            "locomo", CATALOG, [t["item"] for t in turns], [t["dia_id"] for t in turns],
            [(q["qid"], q["question"], q["entity"]) for q in questions], elsewhere, keep=args.keep,
            workers=args.workers, torch_threads=args.torch_threads)
        for config in (c for configs in elsewhere.values() for c in configs):
            runs[config.name] = other_runs[config.name].ranked
            configurations[config.name] = {**config.describe(), "latency": other_runs[config.name].latency(),
                                           **evaluate(runs[config.name], questions, known)}

    compare(result, configurations, baselines, questions)
    timings["total_s"] = time.perf_counter() - started
    result["timings"] = {key: round(val, 2) for key, val in timings.items()}
    args.out.mkdir(parents=True, exist_ok=True)
    rows = [{"name": name, **entry} for name, entry in configurations.items()]
    rows += [{"name": name, "baseline": True, **entry} for name, entry in baselines.items()]
    result["plots"] = plots(args.out, args.name, rows,
                            f"LoCoMo ({len(data['samples'])} conversations, {len(questions)} questions)")
    harness.publish(result, out=args.out, name=args.name, report=markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
