"""The one home of Memseek's deployment settings.

Every setting has a documented default here and can be overridden by an environment variable
of the same name (integers and booleans are parsed). Code reads settings through
``memseek_setting(name)``; nothing else reads these environment variables.
"""
from __future__ import annotations

import os

DEFAULTS: dict[str, object] = {
    # Write side (reference 3.3)
    "MAX_BATCH": 100,
    "MAX_TEXT_CHARS": 65_536,
    "MAX_CONTENT_BYTES": 131_072,
    "MAX_ANNOTATION_BYTES": 32_768,
    "MAX_DERIVED_FROM": 256,
    "MAX_DERIVATION_DEPTH": 4,
    # A request body's bytes: MAX_BATCH records of MAX_TEXT_CHARS characters each written as a
    # six-byte \uXXXX escape, plus MAX_CONTENT_BYTES, MAX_ANNOTATION_BYTES and 4 KiB of other
    # members per record, so the largest documented batch always fits however it is encoded.
    "MAX_BODY_BYTES": 100 * (65_536 * 6 + 131_072 + 32_768 + 4_096),
    # A POST /import body (one export, imported in one transaction); manage.py import reads a
    # file of any size.
    "MAX_IMPORT_BYTES": 256 * 1024 * 1024,
    # A request target's bytes (path and query string): a MAX_QUERY_CHARS query of three-byte
    # characters, each percent-encoded to nine bytes, plus 8 KiB of other parameters, so every
    # valid GET /search or /context fits. Quickstart starts gunicorn with no request-line limit
    # of its own (--limit-request-line 0), so this is the limit that answers (414).
    "MAX_URL_BYTES": 9 * 8_192 + 8_192,
    # Reads
    "MAX_DOCUMENT_RECORDS": 500,
    "MAX_RESPONSE_BYTES": 4_194_304,
    "TOUCH_ON_READ": True,
    # Search (views-and-search.md, reference A.5)
    "MAX_QUERY_CHARS": 8_192,
    # Distinct terms (runs of letters and digits) a question may hold (catalog_app.bm25_terms):
    # each costs a column of every lexical statement, and PostgreSQL caps a statement's columns
    "MAX_QUERY_TERMS": 384,
    "SEARCH_RENDER_TOKENS": 16_000,
    "SEARCH_MAX_CONCURRENCY": 8,
    "QUERY_EMBEDDING_CACHE": 512,
    "VECTOR_EXACT_MAX": 2000,
    "MAX_GRAPH_DEPTH": 4,
    "MAX_GRAPH_PATHS": 100,
    "MODEL_CONTEXT_TOKENS": 60_000,
    "MAX_PROMPT_TOKENS": 50_000,
    # Memory lookups (GET /memory/*)
    "MEMORY_PAGE_LIMIT": 20,
    "MEMORY_MAX_PAGE": 100,
    "MEMORY_AROUND_MAX": 50,
    "MEMORY_GREP_MAX_CHARS": 512,
    "MEMORY_GREP_CANDIDATES": 10_000,
    # Lexical search (lexical-search.md): ceilings of a request's scan budgets, and how many
    # retrievals may run at once across every process sharing the database
    "LEXICAL_SCAN_ROWS_MAX": 2_000_000,
    "LEXICAL_SCAN_BYTES_MAX": 4_294_967_296,
    "LEXICAL_RETRIEVAL_SLOTS": 4,
    # Lexical index (catalog_app.lexical): the analyzers the write path maintains, comma-separated
    # (bm25_v1, english, en_v1); each one costs every write that makes records visible. Search's
    # BM25 channel reads bm25_v1, its text channel english, the bm25_en signal en_v1; an
    # unmaintained one is scanned instead.
    "LEXICAL_ANALYZERS": "bm25_v1,english,en_v1",
    # How many logged posting changes of a workspace make the write that reaches them enqueue a
    # compaction of its blocks (catalog_app.lexical.compaction); a query reads what is logged
    # from the posting rows, so fewer is faster to read, more is less compaction work
    "LEXICAL_COMPACT_CHANGES": 10_000,
    # Bytes of compacted block data each process keeps for the next query of the same terms
    # (catalog_app.lexical.block_cache, addressed by content so never stale; 0 turns it off)
    "LEXICAL_BLOCK_CACHE_BYTES": 268_435_456,
    # Free heap a process keeps mapped for its next large arrays instead of returning it to the
    # kernel (memseek_site.allocator; glibc only, 0 keeps the C library's defaults)
    "MALLOC_RETAIN_BYTES": 268_435_456,
    # POST /memory/search (memory-brief-and-lookups.md)
    "MEMORY_SEARCH_HITS": 10,
    "MEMORY_SEARCH_FACTS": 10,
    "MEMORY_KNOWN_LINES": 50,
    # The share of a strong hit's score lent to the passage before and after it in its
    # conversation (retrieval_app.memory.brief_neighbours; 0 turns it off, at most 1)
    "MEMORY_NEIGHBOUR_SHARE": 0.25,
    # How much of a question the brief's date reader reads (retrieval_app.memory.brief_dates):
    # its cost grows with the text it reads, and a question's dates come early
    "MEMORY_DATE_READ_CHARS": 256,
    # Request deadlines (memseek_site.deadline, docs/bounded-work.md): every API request's time
    # budget by route class (read: GET; search: the POST routes that take a question; bulk:
    # writes and /evaluate). gunicorn's worker timeout is set above the longest one.
    "REQUEST_DEADLINE_MS": 10_000,
    "REQUEST_DEADLINE_SEARCH_MS": 10_000,
    "REQUEST_DEADLINE_BULK_MS": 60_000,
    # Auth
    "API_KEY_CACHE_TTL_S": 60,
    # Rate limits (catalog_app.throttle, docs/rate-limits.md): requests per API key and per
    # workspace for each route class, as COUNT/PERIOD (10/s, 600/m, 5/10s); empty: no limit.
    # Counted in the shared cache (CACHE_URL), so every API host sharing it shares the count.
    # A workspace's "limits.keyRate" and "limits.workspaceRate" settings override these.
    "RATE_LIMIT_KEY_READ": "",
    "RATE_LIMIT_KEY_SEARCH": "",
    "RATE_LIMIT_KEY_BULK": "",
    "RATE_LIMIT_WORKSPACE_READ": "",
    "RATE_LIMIT_WORKSPACE_SEARCH": "",
    "RATE_LIMIT_WORKSPACE_BULK": "",
    # Storage quotas (catalog_app.services.storage_quota): records and bytes (text plus content)
    # a workspace may hold; 0: no quota. A workspace's "limits.records" and "limits.bytes" override.
    "QUOTA_RECORDS": 0,
    "QUOTA_BYTES": 0,
    # Enrichment
    "ENRICH_BATCH": 100,
    "ENRICH_POOL": 900,
    "ENRICH_CLAIM": 64,
    "EMBEDDING_BATCH": 64,
    # How the bundled all-MiniLM-L6-v2 runs: torch (sentence-transformers), onnx (ONNX Runtime,
    # fp32) or onnx-int8 (ONNX Runtime, dynamically quantized int8), see docs/encoder.md. Part of
    # the embedding space: a runtime change is a space change, like a model change.
    "EMBEDDING_RUNTIME": "torch",
    # Load the bundled model while the process starts (Django's app loading), so a gunicorn
    # worker takes no traffic before it can embed; quickstart turns it on for its workers.
    "PRELOAD_EMBEDDING_MODEL": False,
    "PENDING_RECOVERY_AGE_S": 30,
    "PENDING_RECOVERY_INTERVAL_S": 10,
    "SCORER_TEXT_CHARS": 12_000,
    # Task time limits in seconds (memseek_site.queues, docs/queues.md): past the soft one the task
    # fails (and is dead-lettered), past the hard one its pool process is killed
    "ENRICH_SOFT_TIME_LIMIT_S": 900,
    "ENRICH_TIME_LIMIT_S": 960,
    "LEXICAL_COMPACT_SOFT_TIME_LIMIT_S": 300,
    "LEXICAL_COMPACT_TIME_LIMIT_S": 330,
    "MAINTENANCE_SOFT_TIME_LIMIT_S": 60,
    "MAINTENANCE_TIME_LIMIT_S": 90,
    # How long a finished task's id is remembered, so a second delivery of it changes nothing
    # (catalog_app.models.TaskReceipt); longer than the broker's visibility timeout
    "TASK_RECEIPT_TTL_S": 86_400,
    # GET /health turns degraded past these (catalog_app.health, docs/queues.md)
    "HEALTH_QUEUE_MAX_DEPTH": 10_000,
    "HEALTH_QUEUE_MAX_AGE_S": 300,
    "HEALTH_PENDING_MAX_RECORDS": 10_000,
    "HEALTH_PENDING_MAX_AGE_S": 600,
    "HEALTH_LEXICAL_PENDING_MAX_ROWS": 1_000_000,
    # MCP: the browser origins allowed to call /mcp, comma-separated (requests without Origin pass)
    "MCP_ALLOWED_ORIGINS": "",
    # GET /metrics (docs/metrics.md): off unless enabled, and then only with this bearer key
    # The console's Operations page: how often each process adds its request counts to the
    # shared table (catalog_app.operations.request_minutes); 0 writes after every request
    "OPERATIONS_FLUSH_S": 10,
    "METRICS_ENABLED": False,
    "METRICS_KEY": "",
    # Model providers (embeddings over HTTP, chat completions)
    "PROVIDER_TIMEOUT_S": 30,
    # Read replicas (DATABASE_REPLICA_URLS; memseek_site.replicas, docs/replicas.md): where read
    # routes go (read_your_writes: a replica that has replayed the caller's last write; primary:
    # never a replica), how far a replica's replay may trail what it received before it is
    # skipped, how long a read waits for a replica to reach its write before the primary serves
    # it, how long a replica that failed is left alone, and how long a process trusts a replay
    # position it heard from a healthy replica to route reads it covers without asking again
    "READ_CONSISTENCY": "read_your_writes",
    "REPLICA_MAX_LAG_S": 10.0,
    "REPLICA_WAIT_MS": 0,
    "REPLICA_RETRY_S": 5.0,
    "REPLICA_STATE_TTL_MS": 1000,
    # While the primary cannot be reached (a failover's gap), a read route is served by a replica
    # that is still a standby and has replayed the read's write (docs/failover.md); false: 503
    "STANDBY_READS": True,
}

_CEILINGS = {"MAX_QUERY_TERMS": 384, "API_KEY_CACHE_TTL_S": 60, "MAX_GRAPH_DEPTH": 16, "MAX_GRAPH_PATHS": 500,
             "MAX_DERIVATION_DEPTH": 16, "MAX_DERIVED_FROM": 256, "MEMORY_MAX_PAGE": 1000,
             "MEMORY_AROUND_MAX": 500, "MEMORY_SEARCH_HITS": 50, "MEMORY_SEARCH_FACTS": 50,
             "MEMORY_KNOWN_LINES": 200, "MEMORY_NEIGHBOUR_SHARE": 1.0}

# Settings that take one of a few words; any other value stops the process at start
# (``memseek_settings_check``) and wherever it is read.
_CHOICES = {"EMBEDDING_RUNTIME": ("torch", "onnx", "onnx-int8")}


def memseek_setting(name: str):
    """Return the value of setting ``name``: Django's ``MEMSEEK[name]``, else the environment
    variable of that name, else the default. Raises ``KeyError`` for an unknown name and
    ``ImproperlyConfigured`` for a value outside the setting's choices."""
    from django.conf import settings

    default = DEFAULTS[name]
    overrides = getattr(settings, "MEMSEEK", {})
    if name in overrides:
        value = overrides[name]
    elif name in os.environ:
        value = _parse(os.environ[name], default)
    else:
        value = default
    choices = _CHOICES.get(name)
    if choices is not None and value not in choices:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(f"{name} must be one of {', '.join(choices)}, not {value!r}")
    ceiling = _CEILINGS.get(name)
    return min(value, ceiling) if ceiling is not None else value


def memseek_settings_check() -> None:
    """Read every setting that has choices, so a process with a bad value stops at start with
    ``ImproperlyConfigured`` naming the setting instead of failing its first request."""
    for name in _CHOICES:
        memseek_setting(name)


def _parse(raw: str, default):
    if isinstance(default, bool):
        return raw.strip().lower() in ("1", "true", "yes", "on")
    if isinstance(default, int):
        return int(raw)
    if isinstance(default, float):
        return float(raw)
    return raw
