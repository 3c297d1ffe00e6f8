"""Each embedding space gets its own partial HNSW index (cosine) over
``embedding::vector(dim)``, so spaces of different dimensions share one table. The index is
ensured when a catalog is loaded and again before enrichment writes a batch of vectors into a
space (a runtime change makes a new space without a catalog load, ``EMBEDDING_RUNTIME``)."""
from __future__ import annotations

import hashlib

from django.db import connection

from ..record_sql import EMBEDDING, space_literal


def embedding_index_name(space: str) -> str:
    return "record_embedding_hnsw_" + hashlib.sha256(space.encode()).hexdigest()[:16]


def _index_sql(space: str, dimensions: int, concurrently: bool) -> str:
    if not 8 <= int(dimensions) <= 4096:
        raise ValueError(f"invalid embedding space {space!r} / {dimensions}")
    # The space is a validated literal (the form the vector queries write, so the planner
    # matches them to this partial index); the dimension is an int.
    return (f"CREATE INDEX {'CONCURRENTLY ' if concurrently else ''}IF NOT EXISTS {embedding_index_name(space)} "
            f"ON {EMBEDDING} USING hnsw ((embedding::vector({int(dimensions)})) vector_cosine_ops) "
            f"WHERE space = {space_literal(space)}")


def embedding_space_ensure_index_concurrently(space: str, dimensions: int) -> None:
    """Build the HNSW index of ``space`` without blocking writes (``CREATE INDEX CONCURRENTLY``),
    for a space a re-embedding job has filled. A build interrupted before (its process killed)
    leaves an invalid index behind, which is dropped and built again. Must run outside a
    transaction; idempotent."""
    sql = _index_sql(space, dimensions, concurrently=True)
    name = embedding_index_name(space)
    with connection.cursor() as cursor:
        cursor.execute("SELECT i.indisvalid FROM pg_index i WHERE i.indexrelid = to_regclass(%s)", [name])
        row = cursor.fetchone()
        if row is not None and row[0]:
            return
        if row is not None:
            cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
        cursor.execute(sql)


def embedding_space_ensure_index(space: str, dimensions: int) -> None:
    """Create the HNSW index of ``space`` if it does not exist yet. Idempotent; when it exists,
    one catalog lookup."""
    sql = _index_sql(space, dimensions, concurrently=False)
    with connection.cursor() as cursor:
        # Looked up first: CREATE INDEX IF NOT EXISTS takes its lock on the table (one that waits
        # for, and blocks, every write of embeddings) before it finds the index there.
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [embedding_index_name(space)])
        if cursor.fetchone()[0]:
            return
        cursor.execute(sql)


def embeddings_insert(*, space: str, record_ids: list, workspace_ids: list[int], vector_texts: list[str]) -> None:
    """The one INSERT of vectors: record ``record_ids[i]`` of workspace ``workspace_ids[i]`` gets the
    vector whose JSON text is ``vector_texts[i]`` in ``space`` (no per-component adaptation); a
    vector already stored for (record, space) is kept."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {EMBEDDING} (record_id, workspace_id, space, embedding, created_at) "
            "SELECT r, w, %s, v::vector, now() FROM unnest(%s::uuid[], %s::bigint[], %s::text[]) AS u(r, w, v) "
            "ON CONFLICT (record_id, space) DO NOTHING",
            [space, list(record_ids), list(workspace_ids), list(vector_texts)])
