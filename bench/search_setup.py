"""Helpers of ``bench/search.py``: the bench database, the corpus built once per size, the query
set, statistics and run metadata.

Run metadata and the raw psycopg connection come from ``bench/ingest.py`` (imported, not
copied); the gunicorn server under test from ``bench/processes.py``.

The corpus of one size lives in its own database (``memseek_bench_<size>`` on the configured
PostgreSQL server, created and migrated on first use) in the workspace ``bench-search-<size>``,
and is reused while it holds the expected rows. Building it takes a documented shortcut: the
ingest service writes the records (``record_ingest_batch``, batches of 100) into collections
without required processors, and the MiniLM vectors, computed once by the service's own
``embed_texts`` and cached under ``bench/.cache/``, are then bulk-written to
``catalog_app_recordembedding`` with COPY. ``bench/ingest.py`` measures the real ingest path.

    python bench/search_setup.py --embed 10000 100000        # only fill the embedding cache
    python bench/search_setup.py --embed 100000 --rows 50000:99153   # a helper sharing the fill
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import statistics
import sys
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memseek_site.settings")


from bench.harness import in_turn, log, package_version  # noqa: E402

CACHE = ROOT / "bench" / ".cache"
SEARCH_CATALOG = ROOT / "bench" / "catalogs" / "search"
SEED = 7
BATCH = 100
GRAPH_NODES = 1000
GRAPH_OUT_DEGREE = 3
GRAPH_PREDICATES = ("depends_on", "calls", "imports")


def progress(iterable=None, *, total=None, desc: str = "", unit: str = "it"):
    """A tqdm progress bar on stderr (tqdm comes with sentence-transformers/transformers); quiet
    when BENCH_PROGRESS=0 (the smoke tests)."""
    from tqdm import tqdm

    return tqdm(iterable, total=total, desc=desc, unit=unit, file=sys.stderr, dynamic_ncols=True,
                mininterval=1.0, leave=True, disable=os.environ.get("BENCH_PROGRESS", "1") == "0")


def django_setup() -> None:
    import django
    from django.apps import apps

    if not apps.ready:
        django.setup()


# ---------------------------------------------------------------------------------------------
# Statistics


def percentile(values, q: float) -> float:
    """Linear-interpolation percentile (numpy's default), ``q`` in 0..100."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def latency_summary(seconds: list[float]) -> dict:
    """p50/p95/p99/mean/min/max in milliseconds, and the sample count."""
    ms = [s * 1000 for s in seconds]
    return {"n": len(ms), "p50_ms": percentile(ms, 50), "p95_ms": percentile(ms, 95), "p99_ms": percentile(ms, 99),
            "mean_ms": statistics.fmean(ms) if ms else float("nan"), "min_ms": min(ms) if ms else float("nan"),
            "max_ms": max(ms) if ms else float("nan")}


# ---------------------------------------------------------------------------------------------
# Run metadata


def environment() -> dict:
    """``bench/ingest.py``'s run metadata (machine, versions, commit), plus what a search
    benchmark also depends on: pgvector's version, the server's memory settings and the
    search settings."""
    from django.db import connection

    from bench.ingest import environment as ingest_environment
    from memseek_site.conf import memseek_setting

    env = ingest_environment()
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('shared_buffers'), current_setting('work_mem'), "
                       "current_setting('effective_cache_size'), current_setting('jit'), "
                       "current_setting('max_connections'), "
                       "(SELECT extversion FROM pg_extension WHERE extname = 'vector')")
        shared_buffers, work_mem, cache_size, jit, max_connections, pgvector = cursor.fetchone()
    env["versions"]["pgvector"] = pgvector
    env["postgres_settings"] = {"shared_buffers": shared_buffers, "work_mem": work_mem,
                                "effective_cache_size": cache_size, "jit": jit, "max_connections": max_connections}
    env["settings"] = {name: memseek_setting(name) for name in (
        "SEARCH_MAX_CONCURRENCY", "SEARCH_RENDER_TOKENS", "MAX_GRAPH_DEPTH", "MAX_GRAPH_PATHS", "EMBEDDING_BATCH")}
    return env


def gunicorn_version() -> str | None:
    return package_version("gunicorn")


# ---------------------------------------------------------------------------------------------
# The bench database


def use_bench_database(name: str) -> dict:
    """Point Django's ``default`` connection at database ``name`` on the configured server
    (created if missing, then migrated). With ``BENCH_TEMPLATE_DATABASE`` set (the test suite's
    migrated template), a missing database is created as a copy of that one, so ``migrate`` has
    nothing to do. Works after ``django.setup()`` (for example under ``python -m bench``) because
    no query has to have run on the old database. Returns the new settings dict."""
    import psycopg
    from django.core.management import call_command
    from django.db import connections

    new = dict(connections["default"].settings_dict, NAME=name)
    new["TEST"] = dict(new.get("TEST") or {}, NAME=f"test_{name}")
    admin = psycopg.connect(**_psycopg_params(dict(new, NAME="postgres")), autocommit=True)
    try:
        if not admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            log(f"creating database {name}")
            template = os.environ.get("BENCH_TEMPLATE_DATABASE")
            admin.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
    finally:
        admin.close()
    _point_default_at(new)
    call_command("migrate", verbosity=0, interactive=False)
    return new


def _point_default_at(settings_dict: dict) -> None:
    from django.conf import settings
    from django.db import connections

    from memseek_site import parallel

    connections["default"].close()
    parallel.shutdown()  # its threads keep connections to the previous database otherwise
    settings.DATABASES["default"] = settings_dict
    connections.settings["default"] = settings_dict
    del connections["default"]


@contextmanager
def bench_database(name: str, *, drop: bool, cache: Path):
    """Around a run on the bench database ``name`` (``build_corpus`` switches to it): on exit
    Django's ``default`` connection points at the database it used before (under ``manage.py
    bench`` or pytest the caller goes on using it), and with ``drop`` the bench database and its
    build info in ``cache`` are deleted (a throwaway corpus, such as the smoke tests')."""
    from django.conf import settings

    previous = settings.DATABASES["default"]
    try:
        yield
    finally:
        _point_default_at(previous)
        if drop:
            _drop_database(name)
            (cache / f"build-{name}.json").unlink(missing_ok=True)


def _psycopg_params(db: dict) -> dict:
    params = {"dbname": db["NAME"], "user": db.get("USER") or None, "password": db.get("PASSWORD") or None,
              "host": db.get("HOST") or None, "port": db.get("PORT") or None}
    params.update({key: value for key, value in (db.get("OPTIONS") or {}).items() if isinstance(value, (str, int))})
    return {key: value for key, value in params.items() if value is not None}


def raw_connection():
    """``bench/ingest.py``'s plain psycopg connection to the database Django's ``default``
    points at, switched to autocommit and without psycopg's automatic prepared statements (the
    service's Django connection prepares nothing either)."""
    from bench.ingest import raw_connection as ingest_raw_connection

    conn = ingest_raw_connection()
    conn.autocommit = True
    conn.prepare_threshold = None
    return conn


# ---------------------------------------------------------------------------------------------
# Corpus: records, links, query texts


def corpus_items(size: int, seed: int = SEED) -> list[dict]:
    from bench.corpus import make_records

    return make_records(size, seed)


def graph_nodes(size: int) -> int:
    """Services in the graph of a corpus of ``size`` records: ``GRAPH_NODES``, fewer only for a
    corpus smaller than that (a smoke test's)."""
    return min(GRAPH_NODES, size)


def graph_items(size: int, seed: int = SEED) -> list[dict]:
    """A dependency-like graph: ``graph_nodes(size)`` services, each with ``GRAPH_OUT_DEGREE``
    links to distinct other services (event records of the ``deps`` collection)."""
    rng = random.Random(f"graph-{seed}")
    items = []
    nodes = graph_nodes(size)
    for node in range(nodes):
        targets = rng.sample([n for n in range(nodes) if n != node], GRAPH_OUT_DEGREE)
        for target in targets:
            predicate = rng.choice(GRAPH_PREDICATES)
            src, dst = graph_node(node), graph_node(target)
            items.append({"entity": "system.services", "collection": "deps", "type": "link",
                          "text": f"{src} {predicate.replace('_', ' ')} {dst}.",
                          "content": {"src": src, "dst": dst, "rel": predicate}})
    return items


def graph_node(index: int) -> str:
    return f"svc-{index:04d}"


NATURAL_QUERIES = (
    "who is worried about the renewal quote", "budget approved for the analytics dashboard",
    "customer frustrated with support response time", "security questionnaire still waiting on legal",
    "move the pricing review to Tuesday", "which accounts are comparing us with other vendors",
    "rollout of the mobile app to more users", "outage affecting accounts after the last release",
    "prefers to be contacted by email", "contract comes up for renewal in March",
    "onboarding checklist for the Berlin office", "increase in latency tickets",
    "procurement lead signs off on compliance", "send a revised proposal for the SSO integration",
    "training workshop for the new team", "churn risk escalation", "payment terms for the enterprise plan",
    "who works for Acme Logistics", "data export API rate limits", "warehouse sensors pilot deployment",
)


def query_texts(items: list[dict], n: int = 50, seed: int = SEED) -> list[dict]:
    """``n`` query texts: 30 short keyword queries cut from corpus records (``make_queries``)
    and 20 natural-language questions over the corpus vocabulary, each with the entity of a
    corpus record (for entity-scoped views). Fewer than 20 queries (a smoke test's) keep the
    kinds in proportion, 3 keyword queries to 2 questions."""
    from bench.corpus import make_queries

    natural_count = len(NATURAL_QUERIES) if n >= len(NATURAL_QUERIES) else 2 * n // 5
    lexical = make_queries(items, n - natural_count, seed)
    rng = random.Random(f"natural-{seed}")
    natural = [{"q": q, "entity": items[rng.randrange(len(items))]["entity"], "source_index": None}
               for q in NATURAL_QUERIES[:natural_count]]
    queries = []
    for index in range(n):  # interleave the two kinds
        pool = lexical if index % 5 < 3 and lexical else natural
        queries.append(pool.pop(0) if pool else (lexical or natural).pop(0))
    return queries


# ---------------------------------------------------------------------------------------------
# Embedding cache


def default_embedding_config():
    from catalog_app.catalog.models_conf import build, default_body

    return build(default_body()).embedding


def _texts_digest(texts: list[str], config) -> str:
    digest = hashlib.sha256(f"{config.model}|{config.dimensions}|{config.max_text_chars}".encode())
    for text in texts:
        digest.update(hashlib.sha256(text.encode()).digest())
    return digest.hexdigest()[:24]


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)


def cached_embeddings(texts: list[str], config, label: str, rows: tuple[int, int] | None = None,
                      cache: Path = CACHE):
    """float32 matrix of ``embed_texts(config, texts)`` (the service's own embedding call),
    cached in ``cache`` (default ``bench/.cache/``) by the texts and the model, computed in
    batches with a progress bar on a miss. An interrupted fill resumes. ``rows=(lo, hi)`` fills
    only those rows, into a side file that a later full call picks up (so a second process can
    share a long fill)."""
    import numpy as np

    cache.mkdir(parents=True, exist_ok=True)
    digest = _texts_digest(texts, config)
    path = cache / f"{config.space}-{label}-{digest}.npy"
    if path.exists():
        matrix = np.load(path)
        if matrix.shape == (len(texts), config.dimensions):
            return matrix, {"cache": _shown(path), "hit": True, "seconds": 0.0}
    lo, hi = rows or (0, len(texts))
    partial = path.with_suffix(".partial.npy") if rows is None else path.with_suffix(f".rows{lo}-{hi}.npy")
    matrix = np.zeros((len(texts), config.dimensions), dtype=np.float32)
    sources = [partial] + (sorted(cache.glob(path.stem + ".rows*.npy")) if rows is None else [])
    for source in sources:  # resume: rows already computed (never all-zero: unit vectors)
        if source.exists():
            saved = np.load(source)
            if saved.shape == matrix.shape:
                filled = np.any(saved != 0, axis=1)
                matrix[filled] = saved[filled]
    todo = [index for index in range(lo, hi) if not matrix[index].any()]
    started = time.perf_counter()
    processes = _fill(texts, config, label, matrix, todo, partial)
    seconds = time.perf_counter() - started
    if rows is not None:
        np.save(partial, matrix)
        return matrix, {"rows": [lo, hi], "seconds": seconds}
    np.save(path, matrix)
    for source in sources:
        source.unlink(missing_ok=True)
    return matrix, {"cache": _shown(path), "hit": False, "seconds": seconds, "texts": len(texts),
                    "computed": len(todo), "processes": processes}


def _fill(texts, config, label, matrix, todo: list[int], partial: Path) -> int:
    """Embed the ``todo`` rows with the service's ``embed_texts`` in one spawned process per
    usable core, one torch thread each (on two cores 15-40% more texts per second than one
    process with two threads); returns the processes used."""
    from concurrent.futures import ProcessPoolExecutor
    import multiprocessing

    import numpy as np

    from catalog_app.embedding import embedding_batch_size

    step = embedding_batch_size(config) * 8
    chunks = [todo[start:start + step] for start in range(0, len(todo), step)]
    if len(chunks) <= 1:  # spawning processes that each load torch and the model costs more than one chunk
        if chunks:
            matrix[chunks[0]] = np.asarray(_embed(config, [texts[i] for i in chunks[0]]), dtype=np.float32)
        return 1
    processes = len(os.sched_getaffinity(0))
    bar = progress(total=len(todo), desc=f"embedding {label} ({config.space}, {processes} process(es))", unit="text")
    last_save = time.monotonic()
    try:
        with ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn"),
                                 initializer=_embedding_process) as pool:
            vectors = pool.map(_embed, [config] * len(chunks), [[texts[i] for i in chunk] for chunk in chunks])
            for indexes, chunk_vectors in zip(chunks, vectors):
                matrix[indexes] = np.asarray(chunk_vectors, dtype=np.float32)
                bar.update(len(indexes))
                if time.monotonic() - last_save > 60:
                    np.save(partial, matrix)
                    last_save = time.monotonic()
    finally:
        bar.close()
    return processes


def _embedding_process() -> None:
    import torch

    torch.set_num_threads(1)
    django_setup()


def _embed(config, texts: list[str]) -> list[list[float]]:
    from catalog_app.embedding import embed_texts

    return embed_texts(config, texts)


def word_mean_embeddings(texts: list[str], config, label: str, cache: Path = CACHE):
    """float32 matrix, one unit vector per text: the normalised mean of the service's own
    embedding (``embed_texts``) of each of the text's words (``bm25_tokens``), the words' vectors
    cached in ``cache``. A stand-in for a corpus too large to encode on a shared machine (its
    vectors cluster by the words texts share, as MiniLM's do; they are not MiniLM's vectors of
    the texts, so use it for latency, never for quality)."""
    import numpy as np

    from catalog_app.bm25_terms import bm25_tokens

    tokens = [bm25_tokens(text) for text in texts]
    words = list(dict.fromkeys(word for text_tokens in tokens for word in text_tokens))
    word_matrix, info = cached_embeddings(words, config, f"{label}-words", cache=cache)
    row_of = {word: index for index, word in enumerate(words)}
    matrix = np.zeros((len(texts), config.dimensions), dtype=np.float32)
    for index, text_tokens in enumerate(tokens):
        if text_tokens:
            matrix[index] = word_matrix[[row_of[word] for word in text_tokens]].mean(axis=0)
        else:
            matrix[index, 0] = 1.0
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix, {**info, "vectors": "word means", "words": len(words)}


def distinct_texts(items: list[dict]) -> list[str]:
    return list(dict.fromkeys(item["text"] for item in items))


# ---------------------------------------------------------------------------------------------
# Building (or reusing) the corpus of one size


def workspace_name(size: int) -> str:
    return f"bench-search-{size}"


def _drop_database(name: str) -> None:
    import psycopg
    from django.db import connections

    connections["default"].close()
    admin = psycopg.connect(**_psycopg_params(dict(connections["default"].settings_dict, NAME="postgres")),
                            autocommit=True)
    try:
        log(f"dropping database {name}")
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        admin.close()


def corpus_state(workspace) -> dict:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT collection, count(*), count(*) FILTER (WHERE enriched_at IS NULL) "
                       "FROM catalog_app_record WHERE workspace_id = %s GROUP BY collection", [workspace.pk])
        by_collection = {row[0]: {"records": row[1], "unready": row[2]} for row in cursor.fetchall()}
        cursor.execute("SELECT space, count(*) FROM catalog_app_recordembedding WHERE workspace_id = %s GROUP BY space",
                       [workspace.pk])
        embeddings = dict(cursor.fetchall())
    return {"collections": by_collection, "embeddings": embeddings}


def _complete(state: dict, size: int, space: str) -> bool:
    main, deps = state["collections"].get("main", {}), state["collections"].get("deps", {})
    return (main.get("records") == size and main.get("unready") == 0 and deps.get("records") == graph_nodes(size) *
            GRAPH_OUT_DEGREE and deps.get("unready") == 0 and state["embeddings"].get(space) == size)


def build_corpus(size: int, *, database: str, rebuild: bool = False, seed: int = SEED, cache: Path = CACHE,
                 vectors: str = "model") -> dict:
    """Switch to ``database`` and make sure it holds the corpus of ``size`` records (building it
    if missing, incomplete or ``rebuild``; vectors and build info cached in ``cache``). ``vectors``
    is ``model`` (MiniLM of each text) or ``words`` (``word_mean_embeddings``; give such a corpus
    its own database). Returns ``{"workspace", "key", "build", "items"}``; ``key`` is a fresh API
    key of the workspace."""
    from django.db import connection

    from catalog_app.catalog.runtime import catalog_for_workspace
    from catalog_app.models import Workspace
    from catalog_app.services.catalog_load import catalog_load
    from catalog_app.services.embedding_index import embedding_index_name
    from catalog_app.services.workspaces import api_key_create, workspace_create

    info_path = cache / f"build-{database}.json"
    if rebuild:
        _drop_database(database)
    use_bench_database(database)
    items = corpus_items(size, seed)
    links = graph_items(size, seed)
    name = workspace_name(size)
    workspace = Workspace.objects.filter(name=name).first()
    if workspace is not None:
        space = catalog_for_workspace(workspace).value("models", "models").embedding.space
        state = corpus_state(workspace)
        if _complete(state, size, space):
            build = json.loads(info_path.read_text()) if info_path.exists() else {}
            build.update(reused=True, state=state)
            log(f"reusing workspace {name} in database {database}: {state}")
            return {"workspace": workspace, "key": api_key_create(workspace=workspace, label="bench-search"),
                    "build": build, "items": items}
        log(f"workspace {name} is incomplete ({state}); rebuilding the database")
        _drop_database(database)
        use_bench_database(database)

    started = time.perf_counter()
    build: dict = {"database": database, "workspace": name, "records": size, "links": len(links), "seed": seed,
                   "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "reused": False}
    workspace, key = workspace_create(name=name)
    catalog_load(workspace=workspace, directory=SEARCH_CATALOG)
    workspace.refresh_from_db()
    config = catalog_for_workspace(workspace).value("models", "models").embedding
    if config.provider.adapter != "sentence_transformers":
        raise RuntimeError(f"the bench catalog must embed with the bundled model, not {config.provider.adapter}")
    texts = distinct_texts(items)
    embed = word_mean_embeddings if vectors == "words" else cached_embeddings
    matrix, build["embeddings"] = embed(texts, config, f"records-{size}-seed{seed}", cache=cache)
    build["vectors"] = vectors

    phase = time.perf_counter()
    _ingest(workspace, items, links)
    build["ingest_seconds"] = time.perf_counter() - phase

    # catalog_load created the space's HNSW index on the empty table; inserting 10^5 vectors
    # into a live HNSW index is several times slower than building it afterwards (this is a
    # dedicated database, so dropping and rebuilding it is safe).
    phase = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX IF EXISTS {embedding_index_name(config.space)}")
    row_of = {text: index for index, text in enumerate(texts)}
    _copy_embeddings(workspace.pk, config.space, matrix, row_of)
    build["copy_seconds"] = time.perf_counter() - phase

    build.update(_index_and_analyze(config))
    build["build_seconds"] = time.perf_counter() - started
    build["state"] = state = corpus_state(workspace)
    if not _complete(state, size, config.space):
        raise RuntimeError(f"the corpus is incomplete after building: {state}")
    cache.mkdir(parents=True, exist_ok=True)
    info_path.write_text(json.dumps(build, indent=2) + "\n")
    log(f"built {name} in {build['build_seconds']:.0f}s: {state}")
    return {"workspace": workspace, "key": key, "build": build, "items": items}


def _ingest(workspace, items: list[dict], links: list[dict]) -> None:
    """The corpus's records, then its links, through the ingest service in batches of ``BATCH``."""
    from bench.corpus import batches
    from catalog_app.services.record_ingest import record_ingest_batch

    bar = progress(total=len(items) + len(links), desc=f"ingest {len(items)} records + {len(links)} links",
                   unit="rec")
    for batch in batches(items, BATCH) + batches(links, BATCH):
        result = record_ingest_batch(workspace=workspace, items=batch)
        if len(result.inserted) != len(batch):
            raise RuntimeError(f"ingest inserted {len(result.inserted)} of {len(batch)} "
                               f"(duplicates: {result.duplicates})")
        bar.update(len(batch))
    bar.close()


def _index_and_analyze(config) -> dict:
    """Build the space's HNSW index, then VACUUM ANALYZE the two tables; returns their seconds and
    the index name for the build info."""
    from django.db import connection, transaction

    from catalog_app.services.embedding_index import embedding_index_name, embedding_space_ensure_index

    phase = time.perf_counter()
    # The build's memory for this one transaction: a session SET behind a transaction pooler would
    # stay with whichever server session ran it (docs/scaling.md).
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('maintenance_work_mem', '1GB', true)")
        embedding_space_ensure_index(config.space, config.dimensions)
    timings = {"index_seconds": time.perf_counter() - phase, "index": embedding_index_name(config.space)}
    phase = time.perf_counter()
    with connection.cursor() as cursor:
        for table in ("catalog_app_record", "catalog_app_recordembedding"):
            cursor.execute(f"VACUUM (ANALYZE) {table}")
    timings["vacuum_analyze_seconds"] = time.perf_counter() - phase
    return timings


def _copy_embeddings(workspace_id: int, space: str, matrix, row_of: dict) -> None:
    """COPY (binary) one vector per ``main`` record into ``catalog_app_recordembedding``."""
    from django.utils import timezone
    from pgvector.psycopg import register_vector

    now = timezone.now()
    with raw_connection() as conn:
        register_vector(conn)
        rows = conn.execute("SELECT id, text FROM catalog_app_record WHERE workspace_id = %s AND collection = 'main'",
                            [workspace_id]).fetchall()
        types = dict(conn.execute(
            "SELECT attname, atttypid::int FROM pg_attribute "
            "WHERE attrelid = 'catalog_app_recordembedding'::regclass AND attnum > 0 AND NOT attisdropped").fetchall())
        columns = ("record_id", "workspace_id", "space", "embedding", "created_at")
        bar = progress(total=len(rows), desc="COPY embeddings", unit="row")
        with conn.transaction(), conn.cursor() as cursor:
            with cursor.copy(f"COPY catalog_app_recordembedding ({', '.join(columns)}) FROM STDIN WITH (FORMAT BINARY)"
                             ) as copy:
                copy.set_types([types[column] for column in columns])
                for index, (record_id, text) in enumerate(rows):
                    copy.write_row((record_id, workspace_id, space, matrix[row_of[text]], now))
                    if index % 5000 == 4999:
                        bar.update(5000)
        bar.update(len(rows) - bar.n)
        bar.close()


def main_embed(sizes: list[int], rows: tuple[int, int] | None = None) -> None:
    django_setup()
    config = default_embedding_config()
    for size in sizes:
        items = corpus_items(size)
        texts = distinct_texts(items)
        log(f"size {size}: {len(texts)} distinct texts")
        _, info = cached_embeddings(texts, config, f"records-{size}-seed{SEED}", rows=rows)
        log(f"  {info}")


def replay(conn, statements) -> tuple[float, list[list]]:
    """Run captured ``(sql, params)`` statements with plain psycopg (client-side binding, like
    Django's); a ``SELECT set_config`` runs in one transaction with the statement after it, as
    the backend runs them. Returns (seconds, the non-null first-column values of each query: the
    BM25 channel answers one row with a NULL id when nothing matches)."""
    import psycopg

    cursor = psycopg.ClientCursor(conn)
    results, index = [], 0
    started = time.perf_counter()
    while index < len(statements):
        sql, params = statements[index]
        if sql.lstrip().startswith("SELECT set_config"):
            with conn.transaction():
                cursor.execute(sql, params)
                cursor.fetchall()
                cursor.execute(*statements[index + 1])
                results.append([row[0] for row in cursor.fetchall() if row[0] is not None])
            index += 2
        else:
            cursor.execute(sql, params)
            results.append([row[0] for row in cursor.fetchall() if row[0] is not None])
            index += 1
    return time.perf_counter() - started, results


def measure_query_embedding(config, workspace_id: int, texts: list[str], desc: str,
                            passes: int = 1) -> tuple[dict, dict]:
    """``embed_query`` beside a raw ``SentenceTransformer.encode`` of each text, alternating which
    goes first; returns (latency summary with the ratio, the service's vector of each text).
    The query-vector cache is off while measuring (``QUERY_EMBEDDING_CACHE`` 0): every pass
    after the first would otherwise time a cache hit."""
    from django.conf import settings
    from django.test.utils import override_settings

    with override_settings(MEMSEEK={**getattr(settings, "MEMSEEK", {}), "QUERY_EMBEDDING_CACHE": 0}):
        return _measure_query_embedding(config, workspace_id, texts, desc, passes)


def _measure_query_embedding(config, workspace_id: int, texts: list[str], desc: str,
                             passes: int) -> tuple[dict, dict]:
    from catalog_app.embedding import embed_query, local_model

    model = local_model()

    def raw(text):
        return model.encode([text], normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)

    for text in texts[:5]:  # warm both paths
        embed_query(config, text, workspace_id=workspace_id)
        raw(text)
    vectors, service, baseline = {}, [], []
    for iteration in range(passes):
        for index, text in enumerate(progress(texts, desc=f"{desc}, pass {iteration + 1}", unit="q")):
            pair = [("service", lambda: embed_query(config, text, workspace_id=workspace_id)),
                    ("raw", lambda: raw(text))]
            for name, call in in_turn(pair, iteration + index):
                started = time.perf_counter()
                value = call()
                (service if name == "service" else baseline).append(time.perf_counter() - started)
                if name == "service":
                    vectors[text] = value
    result = {"service": latency_summary(service), "baseline": latency_summary(baseline),
              "service_label": "catalog_app.embedding.embed_query (one text, cache off)",
              "baseline_label": "SentenceTransformer.encode([q], normalize_embeddings=True)"}
    result["ratio_p50"] = result["service"]["p50_ms"] / result["baseline"]["p50_ms"]
    return result, vectors


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Fill the search benchmark's embedding cache")
    parser.add_argument("--embed", type=int, nargs="+", required=True, metavar="SIZE")
    parser.add_argument("--rows", help="LO:HI: fill only these rows (a helper process sharing a long fill)")
    arguments = parser.parse_args()
    main_embed(arguments.embed, tuple(int(x) for x in arguments.rows.split(":")) if arguments.rows else None)
