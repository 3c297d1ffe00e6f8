"""``bench lexical``: exact BM25 top-k from the lexical index beside the full scan it replaces.

python bench/lexical.py [--size 100000 ...] [--corpus wordlist|zipf ...] [--no-scifact]
    [--million] [--queries 20] [--iterations 3] [--k 10] [--out DIR] [--data DIR] [--rebuild] [--drop]
python -m bench lexical [same options]

Corpora: BEIR SciFact (5,183 abstracts, ``--data``, its train queries) and, at each ``--size``
(default 100,000; ``--million`` adds 1,000,000), the synthetic corpora ``--corpus`` names
(default both): ``wordlist``, ``bench/corpus.py``'s customer records (a few hundred distinct
words), and ``zipf``, ``bench/zipf_corpus.py``'s Zipf vocabulary of 200,000 words with
LoCoMo-turn and SciFact-abstract lengths. Each lives in its own workspace of the bench database
``memseek_bench_lexical`` (``--database``), reused while it holds the expected rows and its
index (``--rebuild`` builds again, ``--drop`` drops the database at the end). A build writes the
records with COPY (ready, no processors: the ingest path is ``bench ingest``'s), then builds the
index with the backfill service and measures it: build seconds and the index's size (the growth
of the lexical tables), kept beside the database in ``bench/.cache/`` for later runs. Then
tantivy indexes the same records with the same tokens (``bench/lexical_tantivy.py``, its index
kept in ``bench/.cache/`` too): build seconds and size.

Per query, workspace-wide and in the query's own entity (SciFact has one entity, so only the
first), ``index_top_k``, tantivy's top k over the same terms and scope, and the full scan of the
same contract (``pg_bm25.bm25_candidates``, the statement of the ``bm25`` channel, over the same
scope) run in an order rotated from query to query; the table gives p50/p95 of each, the p50
ratios, how many answers agreed with the scan (same ids in the same order, same N) and how many
of the index's top k tantivy also returned. The first iteration clears the process's block cache
before each query and is reported apart (``index_cold``); ``index`` is the later iterations,
which find the blocks cached (with one iteration, ``index`` is the cold reads); tantivy's
figures are split the same way."""
from __future__ import annotations

import argparse
import itertools
import json
import random
import shutil
import sys
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import harness, lexical_tantivy  # noqa: E402
from bench.search_setup import (  # noqa: E402
    CACHE, bench_database, django_setup, environment, latency_summary, log, progress, use_bench_database,
)

SCIFACT = Path("/work/shared/bench/beir-scifact")
TARGETS = {"p50_ms": 25.0, "p95_ms": 80.0, "speedup": 100.0}  # 1,000,000 records, workspace-wide
PEER_TARGETS = {"zipf": 3.0, "wordlist": 5.0, "size": 3.0}  # index ÷ tantivy at 1,000,000 records
CORPORA = ("wordlist", "zipf")
_COLUMNS = ("id", "workspace_id", "collection", "collection_version", "collection_hash", "entity", "type", "key",
            "status", "text", "content", "occurred_at", "created_at", "last_accessed", "enriched_at", "bm25_tf",
            "bm25_length", "scores", "annotations", "annotation_meta", "depth", "derived_from", "dedupe_hash",
            "tombstone", "en_tf", "en_length")
_COPY_CHUNK = 20_000
_LEXICAL_TABLES = ("catalog_app_lexical_pending", "catalog_app_lexical_document", "catalog_app_lexical_group_stats",
                   "catalog_app_lexical_group", "catalog_app_lexical_block",
                   "catalog_app_lexical_compaction", "catalog_app_lexical_change")


def corpus_spec(name: str, size: int, data: Path) -> dict:
    """Records (POST /records items) and queries ({q, entity}) of one corpus."""
    if name == "scifact":
        from bench.scifact import load_data, record_items

        loaded = load_data(data, "train", None, None)
        items = record_items(loaded["corpus"])
        return {"catalog": ROOT / "bench" / "catalogs" / "scifact", "collection": "abstracts", "items": items,
                "queries": [{"q": text, "entity": "scifact"} for _, text in loaded["queries"]]}
    if name.startswith("zipf"):
        from bench.zipf_corpus import make_queries, make_records
    else:
        from bench.corpus import make_queries, make_records

    items = make_records(size, seed=7)
    return {"catalog": ROOT / "bench" / "catalogs" / "no_processors", "collection": "main", "items": items,
            "queries": make_queries(items, 200, seed=7)}


def _index_size(cursor) -> int:
    cursor.execute("SELECT sum(pg_total_relation_size(c)) FROM unnest(%s::regclass[]) c", [list(_LEXICAL_TABLES)])
    return int(cursor.fetchone()[0] or 0)


def build(name: str, spec: dict, rebuild: bool, database: str) -> tuple:
    """The corpus's workspace, built (records by COPY, then the index by the backfill) unless
    a complete one is there; returns (workspace, build info)."""
    from django.db import connection
    from psycopg.types.json import Jsonb

    from catalog_app.bm25_terms import term_frequencies
    from catalog_app.en_terms import en_term_frequencies
    from catalog_app.catalog.runtime import catalog_for_workspace
    from catalog_app.lexical.analyzers import BM25_V1
    from catalog_app.lexical.backfill import lexical_backfill
    from catalog_app.models import Record, Workspace
    from catalog_app.services.catalog_load import catalog_load
    from catalog_app.services.workspaces import workspace_create

    workspace_name = f"lexical-{name}"
    info_path = CACHE / f"build-{database}-{workspace_name}.json"
    workspace = Workspace.objects.filter(name=workspace_name).first()
    if workspace is not None and not rebuild and info_path.is_file():
        info = json.loads(info_path.read_text())
        if Record.objects.filter(workspace=workspace).count() == info["records"]:
            log(f"{workspace_name}: reusing the built corpus ({info['records']:,} records)")
            return workspace, info
    if workspace is not None:
        workspace.delete()
    workspace, _ = workspace_create(name=workspace_name)
    catalog_load(workspace=workspace, directory=spec["catalog"])
    contract = catalog_for_workspace(workspace).get("collection", spec["collection"], 1).contract_hash
    rng = random.Random(f"lexical-{name}")
    started = time.perf_counter()
    now = datetime.now(timezone.utc)
    items = iter(progress(spec["items"], desc=f"{workspace_name}: COPY", unit="records"))
    # One COPY (one transaction) per chunk: every row updates its workspace's workspace_seq
    # counter row, and that row's versions pile up within a transaction, so one COPY of a
    # million rows slows down as it goes.
    for start in range(0, len(spec["items"]), _COPY_CHUNK):
        with connection.cursor() as cursor, cursor.connection.cursor().copy(
                f"COPY catalog_app_record ({', '.join(_COLUMNS)}) FROM STDIN") as copy:
            for item in itertools.islice(items, _COPY_CHUNK):
                text = item["text"]
                tf, length = term_frequencies(text)
                en_tf, en_length = en_term_frequencies(text)
                occurred = item.get("occurred_at") or now.isoformat()
                copy.write_row((uuid.UUID(int=rng.getrandbits(128), version=4), workspace.pk, spec["collection"],
                                1, contract, item["entity"], item.get("type", "note"), item.get("key"), "active",
                                text, Jsonb({**item.get("content", {}), "text": text}), occurred, now, now, now,
                                Jsonb(tf), length, Jsonb({}), Jsonb({}), Jsonb({}), 0, [], "", False,
                                Jsonb(en_tf), en_length))
    copied = time.perf_counter() - started
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE catalog_app_record")
        size_before = _index_size(cursor)
    started = time.perf_counter()
    with progress(total=len(spec["items"]), desc=f"{workspace_name}: index", unit="records") as bar:
        added, _ = lexical_backfill(workspace_id=workspace.pk, batch=5000, progress=bar.update)
    built = time.perf_counter() - started
    with connection.cursor() as cursor:
        for table in _LEXICAL_TABLES:
            cursor.execute(f"VACUUM ANALYZE {table}")
        size = _index_size(cursor) - size_before
        # What the bench queries is bm25_v1; build time and size cover every maintained analyzer.
        cursor.execute("SELECT coalesce(sum(postings), 0) FROM catalog_app_lexical_block WHERE workspace_id = %s "
                       "AND analyzer = %s", [workspace.pk, BM25_V1.code])
        postings = cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM catalog_app_lexical_document WHERE workspace_id = %s AND analyzer = %s",
                       [workspace.pk, BM25_V1.code])
        visible = cursor.fetchone()[0]
    info = {"records": len(spec["items"]), "visible": visible, "documents": added, "postings": postings,
            "copy_s": copied,
            "index_build_s": built, "index_bytes": size}
    CACHE.mkdir(parents=True, exist_ok=True)
    info_path.write_text(json.dumps(info))
    return workspace, info


def tantivy_path(database: str, workspace) -> Path:
    return CACHE / f"tantivy-{database}-{workspace.name}"


def build_peer(workspace, info: dict, database: str) -> dict:
    """tantivy's index of the workspace's records (built unless the cached one holds as many
    documents as the lexical index); returns its build info, also kept in the corpus's."""

    path = tantivy_path(database, workspace)
    peer = info.get("tantivy")
    if (peer and path.is_dir() and lexical_tantivy.Peer(path, tuple(peer["analyzers"])).documents()
            == info["visible"] == peer["documents"]):
        return peer
    log(f"{workspace.name}: indexing {info['visible']:,} records with tantivy")
    info["tantivy"] = lexical_tantivy.build(path, workspace.pk)
    if info["tantivy"]["documents"] != info["visible"]:
        raise RuntimeError(f"tantivy indexed {info['tantivy']['documents']} records, "
                           f"the lexical index {info['visible']}")
    (CACHE / f"build-{database}-{workspace.name}.json").write_text(json.dumps(info))
    return info["tantivy"]


def full_scan(workspace, q: str, k: int, entity: str | None, collection: str):
    """The ``bm25`` channel's own statement over the same scope: (stats, ids)."""
    from catalog_app.catalog.runtime import catalog_for_workspace
    from search_app.backends.pg_bm25 import bm25_candidates
    from search_app.engine.resolve import resolve_search
    from search_app.engine.spec import parse_search_spec

    scope = {"collections": [collection], **({"entities": [entity]} if entity else {})}
    spec = parse_search_spec({"q": q, "mode": "text", "k": k, "rank": ["bm25"], "scope": scope}, max_query_chars=8192)
    resolved = resolve_search(spec, catalog_for_workspace(workspace))[0]
    return bm25_candidates(resolved, workspace.pk, q, k)


def measure(workspace, spec: dict, queries: int, iterations: int, k: int, scopes: tuple[str, ...],
            peer) -> list[dict]:
    """One row per scope: each engine's latencies, their ratios, agreement with the scan and
    tantivy's overlap with the index (``peer``: a ``lexical_tantivy.Peer``)."""
    from catalog_app.bm25_terms import bm25_query_terms
    from catalog_app.lexical.block_cache import BLOCKS
    from catalog_app.lexical.query import IndexScope, index_top_k

    rows = []
    chosen = [query for query in spec["queries"] if bm25_query_terms(query["q"])][:queries]
    for scope_name in scopes:
        seconds = {label: [] for label in ("index", "index_cold", "tantivy", "tantivy_cold", "full_scan")}
        agreed, scored, matched, shared, returned, identical = 0, 0, 0, 0, 0, 0
        for iteration in range(iterations):
            for number, query in enumerate(chosen):
                entity = query["entity"] if scope_name == "entity" else None
                terms = tuple(bm25_query_terms(query["q"]))
                scope = IndexScope(collection_ids=(spec["collection"],), entities=(entity,) if entity else None)
                calls = [("index", lambda: index_top_k(workspace_id=workspace.pk, analyzer="bm25_v1", terms=terms,
                                                       k=k, scope=scope)),
                         ("tantivy", lambda: peer.top_k(terms, k, entity)),
                         ("full_scan", lambda: full_scan(workspace, query["q"], k, entity, spec["collection"]))]
                turn = (iteration + number) % len(calls)
                answers = {}
                for label, call in calls[turn:] + calls[:turn]:
                    if iteration == 0:
                        BLOCKS.clear()  # the first read of each query starts with no block cached
                    started = time.perf_counter()
                    answers[label] = call()
                    elapsed = time.perf_counter() - started
                    cold = iteration == 0 and label != "full_scan"
                    seconds[label + ("_cold" if cold else "")].append(elapsed)
                if iteration == 0:
                    got, (stats, ids) = answers["index"], answers["full_scan"]
                    ours = [uid for uid, _ in got.hits]
                    agreed += ours == ids and got.n == stats.n
                    scored, matched = scored + got.scored, matched + got.matched
                    shared, returned = shared + len(set(ours) & set(answers["tantivy"])), returned + len(ours)
                    identical += ours == answers["tantivy"]
        summary = {label: latency_summary(values) for label, values in seconds.items()}
        index = summary["index"] if seconds["index"] else summary["index_cold"]
        peer_summary = summary["tantivy"] if seconds["tantivy"] else summary["tantivy_cold"]
        rows.append({"scope": scope_name, "queries": len(chosen), "index": index,
                     "index_cold": summary["index_cold"], "tantivy": peer_summary,
                     "tantivy_cold": summary["tantivy_cold"], "full_scan": summary["full_scan"],
                     "speedup_p50": summary["full_scan"]["p50_ms"] / index["p50_ms"],
                     "vs_tantivy_p50": index["p50_ms"] / peer_summary["p50_ms"],
                     "vs_tantivy_p95": index["p95_ms"] / peer_summary["p95_ms"], "agreed": agreed,
                     "tantivy_overlap": shared / returned if returned else 1.0,
                     "tantivy_identical": identical,
                     "scored_per_matched": scored / matched if matched else 0.0})
    return rows


def markdown(result: dict) -> str:
    lines = ["# Lexical index benchmark (`bench/lexical.py`)", "",
             f"Run {result['started_at']}: `index_top_k` (k {result['k']}) beside the full scan of the same "
             "contract (`pg_bm25.bm25_candidates`), in-process, alternating order.", "",
             "`index` is every later iteration, with the blocks the earlier ones read cached in the process "
             "(`catalog_app.lexical.block_cache`); `cold` is each query's first read, with the cache cleared "
             "before it.", "",
             "| corpus | records | scope | index p50 / p95 ms | cold p50 / p95 ms | full scan p50 / p95 ms |"
             " × faster (p50) | agreed | scored / matched | index build s | index MB |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for corpus in result["corpora"]:
        build_info = corpus["build"]
        for row in corpus["rows"]:
            lines.append(
                f"| {corpus['name']} | {build_info['records']:,} | {row['scope']} | "
                f"{row['index']['p50_ms']:.1f} / {row['index']['p95_ms']:.1f} | "
                f"{row['index_cold']['p50_ms']:.1f} / {row['index_cold']['p95_ms']:.1f} | "
                f"{row['full_scan']['p50_ms']:.1f} / {row['full_scan']['p95_ms']:.1f} | {row['speedup_p50']:.1f} | "
                f"{row['agreed']}/{row['queries']} | {row['scored_per_matched']:.2f} | "
                f"{build_info['index_build_s']:.1f} | {build_info['index_bytes'] / 2**20:.1f} |")
    lines += ["", "tantivy (`bench/lexical_tantivy.py`: the same records and `bm25_v1` tokens, whitespace-split; "
              "k1 1.2, b 0.75 as `bm25_v1`, but 32-bit floats, one-byte lengths and whole-index statistics) in "
              "the same run; ratios are the index's figure ÷ tantivy's. `overlap`: the share of the index's "
              "top k that tantivy also returned; `identical`: queries whose top k matched id for id, in order.", "",
              "| corpus | records | scope | tantivy p50 / p95 ms | cold p50 / p95 ms | index ÷ tantivy p50 | "
              "p95 | overlap | identical | tantivy build s | tantivy MB | index ÷ tantivy size |",
              "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for corpus in result["corpora"]:
        build_info, peer = corpus["build"], corpus["build"]["tantivy"]
        for row in corpus["rows"]:
            lines.append(
                f"| {corpus['name']} | {build_info['records']:,} | {row['scope']} | "
                f"{row['tantivy']['p50_ms']:.2f} / {row['tantivy']['p95_ms']:.2f} | "
                f"{row['tantivy_cold']['p50_ms']:.2f} / {row['tantivy_cold']['p95_ms']:.2f} | "
                f"{row['vs_tantivy_p50']:.1f} | {row['vs_tantivy_p95']:.1f} | {row['tantivy_overlap']:.1%} | "
                f"{row['tantivy_identical']}/{row['queries']} | {peer['build_s']:.1f} | {peer['bytes'] / 2**20:.1f} | "
                f"{build_info['index_bytes'] / peer['bytes']:.1f} |")
    lines += ["", f"Targets at 1,000,000 records, workspace-wide: p50 ≤ {TARGETS['p50_ms']:.0f} ms, p95 ≤ "
              f"{TARGETS['p95_ms']:.0f} ms, ≥ {TARGETS['speedup']:.0f}× the full scan; against tantivy (issue #39), "
              f"p50 ≤ {PEER_TARGETS['zipf']:.0f}× on `zipf`, ≤ {PEER_TARGETS['wordlist']:.0f}× on `wordlist`, "
              f"p95 ≤ {TARGETS['p95_ms']:.0f} ms in every scope, index size ≤ {PEER_TARGETS['size']:.0f}× tantivy's.",
              f"- Machine load average at start: {result['environment']['machine']['load_average_at_start']}; "
              f"end: {result['load_average_at_end']}; commit "
              f"{result['environment'].get('git', {}).get('commit')}."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, action="append", help="synthetic corpus size (repeatable)")
    parser.add_argument("--corpus", choices=CORPORA, action="append",
                        help="synthetic corpus (repeatable; default both)")
    parser.add_argument("--no-scifact", action="store_true", help="skip the SciFact corpus")
    parser.add_argument("--million", action="store_true", help="add the 1,000,000-record synthetic corpus")
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--data", type=Path, default=SCIFACT)
    harness.add_out_argument(parser)
    harness.add_database_arguments(parser, database="memseek_bench_lexical")
    parser.add_argument("--rebuild", action="store_true")
    args = parser.parse_args(argv)
    django_setup()
    sizes = list(args.size or [100_000]) + ([1_000_000] if args.million else [])
    synthetic = {"wordlist": "synthetic", "zipf": "zipf"}  # workspace names: wordlist's predate the flag
    corpora = ([("scifact", 0)] if not args.no_scifact else []) + [
        (f"{synthetic[kind]}-{n}", n) for kind in dict.fromkeys(args.corpus or CORPORA) for n in sizes]
    result = {"benchmark": "lexical", "started_at": harness.now(),
              "k": args.k, "targets": TARGETS, "corpora": []}
    try:
        with bench_database(args.database, drop=args.drop, cache=CACHE):
            use_bench_database(args.database)
            result["environment"] = environment()
            for name, size in corpora:
                spec = corpus_spec(name, size, args.data)
                workspace, info = build(name, spec, args.rebuild, args.database)
                build_peer(workspace, info, args.database)
                scopes = ("workspace",) if name == "scifact" else ("workspace", "entity")
                rows = measure(workspace, spec, args.queries, args.iterations, args.k, scopes,
                               lexical_tantivy.Peer(tantivy_path(args.database, workspace),
                                                    tuple(info["tantivy"]["analyzers"])))
                result["corpora"].append({"name": name, "build": info, "rows": rows})
                result["load_average_at_end"] = harness.load_average()
                log(markdown(result))
    finally:  # a failed run leaves no build info or tantivy index of a dropped database
        if args.drop:
            for info in CACHE.glob(f"build-{args.database}-*.json"):
                info.unlink()
            for index in CACHE.glob(f"tantivy-{args.database}-*"):
                shutil.rmtree(index)
    result["load_average_at_end"] = harness.load_average()
    harness.publish(result, out=args.out, name="lexical", report=markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
