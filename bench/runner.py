"""``python -m bench NAME [options]``: run one benchmark script of ``bench/``.

Each NAME is a script ``bench/<NAME>.py`` exposing ``main(argv) -> int``; everything after NAME
is handed to it unchanged (``--size N``, ``--out DIR``, ``--data PATH``, ...), so
``python -m bench scifact --size 500`` and ``python bench/scifact.py --size 500`` are the same
run. ``bench/`` owns this entry point: no app of the service imports ``bench`` (an import-linter
contract in ``pyproject.toml`` says so), and the tests call :func:`run` in their own process, on
the test database Django already points at.
"""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

FOLDER = Path(__file__).resolve().parent

BENCHMARKS = {
    "ingest": "ingest throughput through POST /records beside raw INSERTs",
    "search": "search latency beside raw SQL",
    "scifact": "retrieval quality on BEIR SciFact (nDCG@10, R@100, MRR@10)",
    "locomo": "evidence recall on LoCoMo conversations beside DRAGON",
    "retrieve": "context retrieval benchmark",
    "lookups": "GET /memory/* lookup latency beside their raw SQL",
    "encoder": "the bundled model's runtimes (torch, onnx, onnx-int8) on SciFact: agreement with torch, "
               "records/s, query p50, peak memory",
    "lexical": "exact BM25 top-k from the lexical index beside the full scan",
    "mcp": "an MCP view tool call over Streamable HTTP beside the same REST call",
    "brief": "POST /memory/search: brief recall on LoCoMo and latency",
    "schema_fuzz": "schemathesis over every operation of a running server's OpenAPI document",
    "replicas": "reads on a streaming replica beside the primary, the read-your-writes check's cost, lag under ingest",
    "hostile": "per route, the hostile question table's worst time beside the ordinary question's p50",
    "soak": "hostile bodies, transport cases, schemathesis and 16 writers + 8 readers through a killed worker, "
            "a restarted database and Redis, on loopback (no 5xx, nothing lost, memory under a ceiling)",
    "observability": "what the /metrics instruments and OpenTelemetry tracing add to GET /search and GET /health",
    "failover": "synchronous mode's commit latency and throughput beside synchronous_commit=local, "
                "on a two-node Patroni cluster",
    "cluster": "search and ingest through HAProxy with one and two API hosts on the namespace cluster: "
               "requests/s, p50/p95 and each tier's CPU ms per request (root)",
}


class BenchError(Exception):
    """An unknown benchmark name (``status`` 2), or a benchmark that exited with a non-zero status
    (``status`` 1)."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


def available() -> list[str]:
    """The benchmark names whose script exists in this checkout."""
    return [name for name in BENCHMARKS if (FOLDER / f"{name}.py").is_file()]


def usage() -> str:
    width = max(len(name) for name in BENCHMARKS)
    lines = ["usage: python -m bench NAME [options]   (python -m bench NAME --help for a script's options)", ""]
    lines += [f"  {name:<{width}}  {BENCHMARKS[name]}" for name in available()]
    return "\n".join(lines)


def run(name: str, *args) -> int:
    """Run benchmark ``name`` with ``args`` (each turned into a string, so tests may pass ints and
    paths) in this process. Returns 0; raises :class:`BenchError` for an unknown name or a non-zero
    exit (argparse's errors included)."""
    present = available()
    if name not in present:
        listing = "; ".join(f"{n} ({BENCHMARKS[n]})" for n in present) or "none"
        reason = f"its script bench/{name}.py does not exist" if name in BENCHMARKS else "unknown benchmark"
        raise BenchError(f"{name!r}: {reason}. Available: {listing}.", 2)
    module = importlib.import_module(f"bench.{name}")
    try:
        code = module.main([str(arg) for arg in args])
    except SystemExit as exit_:  # argparse errors and --help
        code = exit_.code
    if code not in (0, None):
        raise BenchError(f"bench {name} failed (exit status {code})", 1)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0 if argv else 2
    try:
        return run(argv[0], *argv[1:])
    except BenchError as error:
        print(f"python -m bench: {error}", file=sys.stderr)
        return error.status
