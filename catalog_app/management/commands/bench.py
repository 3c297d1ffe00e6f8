"""``python manage.py bench NAME [options]``: run one benchmark script of ``bench/``.

Each NAME is a script ``bench/<NAME>.py`` exposing ``main(argv) -> int``; everything after NAME
is handed to it unchanged (``--size N``, ``--out DIR``, ``--data PATH``, ...), so
``python manage.py bench scifact --size 500`` and ``python bench/scifact.py --size 500`` are
the same run.
"""
import argparse
import importlib
import sys

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

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


def available() -> list[str]:
    """The benchmark names whose script exists in this checkout."""
    folder = settings.BASE_DIR / "bench"
    return [name for name in BENCHMARKS if (folder / f"{name}.py").is_file()]


class Command(BaseCommand):
    help = ("Run a benchmark of bench/ (NAME is one of: " + ", ".join(BENCHMARKS)
            + "); the remaining arguments go to the script, e.g. --size N --out DIR --data PATH.")

    def add_arguments(self, parser):
        parser.add_argument("name", help="benchmark name: " + ", ".join(BENCHMARKS))
        parser.add_argument("script_args", nargs=argparse.REMAINDER,
                            help="options for the script (see python bench/NAME.py --help)")

    def handle(self, *args, name, script_args, **options):
        present = available()
        if name not in present:
            listing = "; ".join(f"{n} ({BENCHMARKS[n]})" for n in present) or "none"
            missing = [n for n in BENCHMARKS if n not in present]
            reason = ("its script bench/%s.py does not exist yet" % name if name in BENCHMARKS
                      else "unknown benchmark")
            raise CommandError(f"{name!r}: {reason}. Available: {listing}."
                               + (f" Not written yet: {', '.join(missing)}." if missing else ""))
        root = str(settings.BASE_DIR)
        if root not in sys.path:
            sys.path.insert(0, root)
        module = importlib.import_module(f"bench.{name}")
        try:
            code = module.main([str(arg) for arg in script_args])
        except SystemExit as exit_:  # argparse errors and --help
            code = exit_.code
        if code not in (0, None):
            raise CommandError(f"bench {name} failed (exit status {code})")
