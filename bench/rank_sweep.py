#!/usr/bin/env python
"""A sweep of hybrid rank formulas over the service's own candidate pools (``--sweep`` of
``bench/scifact.py`` and ``bench/locomo.py``), and the pick of the example catalog's default.

    python bench/scifact.py --sweep ...        # writes scifact_sweep.json
    python bench/locomo.py --sweep ...         # writes locomo_sweep.json
    python bench/rank_sweep.py [--out DIR]     # joins every *_sweep.json: rank_sweep.md

For each question, one in-process hybrid search (``search_execute``, the code path of ``POST
/search``, on the harness's workspace) with a rank that reads every signal gives the ranked
candidate pool with the canonical ``similarity``, ``text_match``, ``bm25`` and ``last_accessed``
of every candidate. Each formula of ``GRID`` is then evaluated over that pool with the engine's
own ``evaluate_rank`` and ``order_scored``, which is exactly how the service ranks it: every
formula of the grid reads ``bm25``, so the service would propose the same pool (the BM25
channel joins the hybrid channels exactly when the rank reads ``bm25``). The chosen formula is
then asked through the API as the harness's ``example`` configuration.

The pick maximises the smallest of the sweeps' figures relative to each one's best grid
formula (SciFact nDCG@10, LoCoMo evidence recall@10), so the default is good on every data set
rather than tuned to one query set. Only the tuning splits are swept (SciFact train judgements, the
LoCoMo dev conversations).
"""
from __future__ import annotations

import argparse
import json
from datetime import datetime, timezone
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_RANK_FILE = ROOT / "fixtures" / "catalogs" / "example" / "conf" / "rank_default.yaml"
RECENCY = ["decay", ["age_hours", "last_accessed"], {"midpoint": 24, "exponent": 1}]
EVERY_SIGNAL = ["sum", [["bm25"], ["similarity"], ["text_match"], ["age_hours", "last_accessed"]]]
BM25_WEIGHTS = (0.2, 0.3, 0.4, 0.5, 0.6)
TEXT_WEIGHTS = (0.0, 0.1, 0.2, 0.3)
RECENCY_WEIGHTS = (0.0, 0.1)


def formula(bm25: float, text_match: float, recency: float) -> list:
    """``bm25·N(bm25) + text_match·N(text_match) + (1 - both)·N(similarity) + recency·D24(last_accessed)``
    in list form (terms of weight 0 left out)."""
    similarity = round(1.0 - bm25 - text_match, 10)
    terms = [["product", bm25, ["normalize", ["bm25"]]]]
    if text_match:
        terms.append(["product", text_match, ["normalize", ["text_match"]]])
    terms.append(["product", similarity, ["normalize", ["similarity"]]])
    if recency:
        terms.append(["product", recency, RECENCY])
    return ["sum", terms]


def grid() -> dict[str, list]:
    """Every formula of the sweep by its name ``b<bm25>_t<text_match>_r<recency>``."""
    out = {}
    for bm25 in BM25_WEIGHTS:
        for text_match in TEXT_WEIGHTS:
            if bm25 + text_match > 0.8 + 1e-9:
                continue
            for recency in RECENCY_WEIGHTS:
                out[f"b{bm25:g}_t{text_match:g}_r{recency:g}"] = formula(bm25, text_match, recency)
    return out


def example_hybrid_rank() -> list:
    """The hybrid variant the example catalog publishes (``conf/rank_default.yaml``)."""
    return yaml.safe_load(EXAMPLE_RANK_FILE.read_text())["variants"]["hybrid"]


def with_stemmed_bm25(tree):
    """``tree`` (a rank expression's list form) with every ``[bm25]`` read as ``[bm25_en]``."""
    if tree == ["bm25"]:
        return ["bm25_en"]
    if isinstance(tree, list):
        return [with_stemmed_bm25(item) for item in tree]
    return tree


def candidate_pools(workspace, questions: list[tuple[str, str, dict]], *, k: int, desc: str) -> dict:
    """Per question id, the hybrid search's ranked pool as ``(record id, Signals, occurred_at,
    seq)`` for every candidate. ``questions`` are ``(qid, text, scope)``."""
    from bench.quality_common import progress
    from search_app.engine.rank_evaluate import Signals
    from search_app.services import search_execute, search_spec_parse

    pools = {}
    for qid, text, scope in progress(questions, desc=desc, unit="q"):
        spec = search_spec_parse({"q": text, "mode": "hybrid", "scope": scope, "rank": EVERY_SIGNAL, "k": k})
        outcome = search_execute(workspace=workspace, spec=spec)
        pools[qid] = [(str(r.row.id), Signals(similarity=r.row.similarity, text_match=r.row.text_match,
                                              bm25=r.row.bm25, bm25_en=r.row.bm25_en,
                                              last_accessed=r.row.last_accessed),
                       r.row.occurred_at, r.row.seq) for r in outcome.sources[0].ranked]
    return pools


def rank_pool(tree: list, pool: list, now: datetime, k: int) -> list[str]:
    """The top ``k`` record ids of ``pool`` ranked by ``tree`` as the service ranks them."""
    from search_app.engine.rank_evaluate import evaluate_rank
    from search_app.engine.rank_expression import parse_rank
    from search_app.engine.result_order import scored_sort_key

    values = evaluate_rank(parse_rank(tree), [signals for _, signals, _, _ in pool], now)
    order = sorted(range(len(pool)), key=lambda i: scored_sort_key(values[i], pool[i][2], pool[i][3], pool[i][0]))
    return [pool[i][0] for i in order[:k]]


def sweep(workspace, questions: list[tuple[str, str, dict]], *, k: int, score, metric: str) -> dict:
    """Every ``grid()`` formula over the questions' pools; ``score({qid: [record id, ...]})``
    returns the figure ``metric`` names. Returns ``{"metric", "formulas": {name: {rank, value}}}``."""
    pools = candidate_pools(workspace, questions, k=k, desc="sweep pools")
    now = datetime.now(timezone.utc)
    formulas = {}
    for name, tree in grid().items():
        ranked = {qid: rank_pool(tree, pool, now, k) for qid, pool in pools.items()}
        formulas[name] = {"rank": tree, "value": score(ranked)}
    return {"metric": metric, "questions": len(questions), "k": k, "formulas": formulas}


def joint(sweeps: dict[str, dict]) -> list[dict]:
    """Each formula every sweep ran, with each sweep's figure and the smallest of them relative
    to that sweep's best formula; best pick first."""
    best = {name: max(f["value"] for f in sweep_["formulas"].values()) for name, sweep_ in sweeps.items()}
    common = set.intersection(*(set(sweep_["formulas"]) for sweep_ in sweeps.values()))
    rows = []
    for formula_name in sorted(common):
        values = {name: sweep_["formulas"][formula_name]["value"] for name, sweep_ in sweeps.items()}
        rows.append({"name": formula_name, "values": values,
                     "worst_relative": min(values[name] / best[name] for name in values)})
    return sorted(rows, key=lambda row: (-row["worst_relative"], row["name"]))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Join the rank sweeps (bench/results/*_sweep.json) into "
                                                 "rank_sweep.md")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args(argv)
    sweeps = {path.name.removesuffix("_sweep.json"): json.loads(path.read_text())
              for path in sorted(args.out.glob("*_sweep.json"))}
    if not sweeps:
        parser.error(f"no *_sweep.json in {args.out}")
    rows = joint(sweeps)
    names = list(sweeps)
    lines = ["# Hybrid rank sweep (tuning splits only)", "",
             *[f"- `{name}`: {sweep_['metric']} over {sweep_['questions']} questions, k = {sweep_['k']}."
               for name, sweep_ in sweeps.items()], "",
             "Every formula is `b·N(bm25) + t·N(text_match) + (1-b-t)·N(similarity) + r·D24(age(last_accessed))`, "
             "ranked over the service's own hybrid candidate pool (`bench/rank_sweep.py`). Sorted by the smallest "
             "of its figures relative to that sweep's best formula.", "",
             "| formula | " + " | ".join(names) + " | worst relative |", "|---|" + "---|" * (len(names) + 1)]
    lines += [f"| `{row['name']}` | " + " | ".join(f"{row['values'][name]:.4f}" for name in names)
              + f" | {row['worst_relative']:.4f} |" for row in rows]
    (args.out / "rank_sweep.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:16]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
