"""The markdown report and the stage-share chart of ``bench/retrieve.py``."""
from __future__ import annotations

from pathlib import Path

from bench import harness
from bench.retrieve import STAGES, TOKEN_BUDGET, TOP_N
from bench.retrieve_tools import WRAPPED

OTHER = "other (sections, entries, explanations)"


def stage_order() -> list[str]:
    return [label for label, _ in STAGES] + [label for label, _ in WRAPPED] + [OTHER]


def _ms(value: float) -> str:
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def markdown_report(results: dict) -> str:
    env = results["environment"]
    machine, versions, git = env["machine"], env["versions"], env["git"]
    lines = ["# Context retrieval benchmark (`bench/retrieve.py`)", "",
             f"Run {results['started_at']}, {results['seconds'] / 60:.1f} min. Server-side latency of "
             f"`retrieval_app.service.retrieve` (the service behind `POST /retrieve`) for `{{query, tokenBudget: "
             f"{TOKEN_BUDGET}, topN: {TOP_N}}}`, in-process for a JSON body, no HTTP; the query embedding is "
             "excluded (pre-computed, reported separately); touch-on-read off; the receipt INSERT included. "
             "Baselines ran in the same process, interleaved query by query with the service calls.", ""]
    for size_key, out in results["sizes"].items():
        size = int(size_key)
        build, latency = out["build"], out["latency"]
        lines += [f"## {size:,} records", ""]
        if build.get("reused"):
            lines.append(f"Corpus reused from database `{build.get('database')}` (built {build.get('built_at')} in "
                         f"{build.get('build_seconds', 0):.0f} s by `bench/search_setup.py`).")
        else:
            lines.append(f"Corpus built in {build['build_seconds']:.0f} s (ingest {build['ingest_seconds']:.0f} s, "
                         f"HNSW index {build['index_seconds']:.0f} s).")
        lines += [f"{out['queries']} queries × {out['iterations']} iterations (samples: "
                  f"{', '.join(repr(q) for q in out['query_samples'][:4])}, ...); a context held "
                  f"{latency['mean_entries']:.1f} entries and {latency['mean_tokens']:.0f} tokens on average; the "
                  f"legs issued {latency['mean_leg_statements']:.1f} statements per call.", "",
                  "| measure | p50 ms | p95 ms | p99 ms | mean ms | retrieve ÷ it (p50) | retrieve ÷ it (p95) |",
                  "|---|---:|---:|---:|---:|---:|---:|"]
        rows = (("`POST /retrieve` service", "retrieve", None),
                ("baseline: hybrid `POST /search` service, same query (k 20, rendered)", "hybrid", "hybrid"),
                (f"baseline: raw SQL of the candidate legs, replayed sequentially (agrees "
                 f"{latency['legs_sql_agrees']})", "legs_sql", "legs_sql"))
        for label, key, ratio in rows:
            s = latency[key]
            ratios = (f"{latency[f'ratio_p50_{ratio}']:.2f} | {latency[f'ratio_p95_{ratio}']:.2f}" if ratio
                      else "— | —")
            lines.append(f"| {label} | {_ms(s['p50_ms'])} | {_ms(s['p95_ms'])} | {_ms(s['p99_ms'])} | "
                         f"{_ms(s['mean_ms'])} | {ratios} |")
        emb = out["embedding"]
        lines += ["", f"Query embedding (excluded above): `embed_query` p50 {_ms(emb['service']['p50_ms'])} ms, "
                  f"p95 {_ms(emb['service']['p95_ms'])} ms; raw `SentenceTransformer.encode` p50 "
                  f"{_ms(emb['baseline']['p50_ms'])} ms (ratio {emb['ratio_p50']:.2f}).",
                  "", "Where the time goes (`explain: true`, one pass; mean total "
                  f"{_ms(out['stages']['total_mean_ms'])} ms, including the explain-only policy-drop count):", "",
                  "| stage | mean ms | share |", "|---|---:|---:|"]
        stages = out["stages"]["stages"]
        for label in stage_order():
            value = stages.get(label)
            if value is not None:
                lines.append(f"| {label} | {_ms(value['mean_ms'])} | {100 * value['share']:.1f}% |")
        for label, value in stages.items():
            if value["nested"]:
                lines.append(f"| ↳ {label} (concurrent, inside its phase) | {_ms(value['mean_ms'])} | |")
        candidates, plan = out["stages"]["candidates_mean"], out["explain_vector"]
        lines += ["", "Candidates per leg (mean): " + ", ".join(f"{leg} {count:.1f}" for leg, count in
                                                                 candidates.items()) + ".", "",
                  f"The vector leg's query uses the HNSW index: **{'yes' if plan['uses_hnsw_index'] else 'NO'}** "
                  f"(EXPLAIN ANALYZE for {plan['query']!r}):", "", "```", *plan["plan"], "```", ""]
    lines += ["## Method and caveats", "",
              "- Corpus: `bench/search.py`'s, built by `bench/search_setup.py` (records through the ingest service, "
              "cached MiniLM vectors COPYed in, HNSW index, VACUUM ANALYZE) into this benchmark's own database per "
              "size; `bench/catalogs/retrieve` is loaded over it: `main` v2 declares the embedding processor "
              "(retrieval embeds the query only when a collection version in scope is embedded), and a `policies` "
              "collection holds 5 platform policy records. Every record is shared (no visibility fields). The "
              "`dep_graph` view makes the graph leg look up links for the strong matches' keys and entities (the "
              "contacts are not graph nodes, so it finds none, but its queries run).",
              "- The legs' SQL baseline replays exactly the statements the legs issued for the query (captured on "
              "each leg thread's connection), sequentially on one already open psycopg connection; the service runs "
              "them in two concurrent phases, each leg thread on a new connection. The ratio prices the rest: "
              "scope compilation, threads and connections, fusion, the canonical reload with bi-temporal "
              "successors, scoring, rendering and token counting of every entry, compilation, the receipt INSERT.",
              f"- Machine: {machine['cores']} cores ({machine['cpu']}), {machine['memory_gib']} GiB; load average at "
              f"start {machine['load_average_at_start']}, at end {machine.get('load_average_at_end')}: the machine "
              "was shared with other work, so absolute figures are noisy; the interleaved ratios are steadier.",
              f"- Versions: Python {versions['python']}, Django {versions['django']}, PostgreSQL "
              f"{versions['postgres_server']}, pgvector {versions['pgvector']}, psycopg {versions['psycopg']}, torch "
              f"{versions['torch']}, sentence-transformers {versions['sentence_transformers']}.",
              f"- Commit {git['commit']} ({git['branch']})" + (
                  f", working tree dirty ({len(git['modified_tracked_files'])} modified tracked files)."
                  if git["dirty"] else "."), ""]
    return "\n".join(lines)


def plot(results: dict, path: Path) -> None:
    with harness.figure(path, 1, 2, figsize=(14, 5.5), gridspec_kw={"width_ratios": [3, 2]}) as (_, (left, right)):
        _plot_stages(left, results)
        _plot_latency(right, results)


def _plot_stages(left, results: dict) -> None:
    sizes = list(results["sizes"])
    labels = stage_order()
    height = 0.8 / len(sizes)
    for index, size in enumerate(sizes):
        stages = results["sizes"][size]["stages"]["stages"]
        shares = [100 * stages.get(label, {}).get("share", 0.0) for label in labels]
        positions = [i + index * height for i in range(len(labels))]
        left.barh(positions, shares, height, label=f"{int(size):,} records")
    left.set_yticks([i + height * (len(sizes) - 1) / 2 for i in range(len(labels))], labels, fontsize=8)
    left.invert_yaxis()
    left.set_xlabel("share of the retrieve total (%)")
    left.set_title("POST /retrieve: where the time goes (explain diagnostics)")
    left.legend(fontsize=8)


def _plot_latency(right, results: dict) -> None:
    sizes = list(results["sizes"])
    names = ["retrieve", "hybrid", "legs_sql"]
    titles = ["/retrieve", "hybrid /search", "legs raw SQL"]
    width = 0.8 / len(sizes)
    for index, size in enumerate(sizes):
        latency = results["sizes"][size]["latency"]
        x = [i + index * width for i in range(len(names))]
        left_bars = right.bar(x, [latency[n]["p50_ms"] for n in names], width, label=f"p50 {int(size):,}")
        right.scatter(x, [latency[n]["p95_ms"] for n in names], marker="_", s=300, color=left_bars.patches[0]
                      .get_facecolor(), label=f"p95 {int(size):,}")
    right.set_xticks([i + width * (len(sizes) - 1) / 2 for i in range(len(names))], titles)
    right.set_ylabel("ms (server-side, query embedding excluded)")
    right.set_title("Latency beside baselines")
    right.legend(fontsize=8)
