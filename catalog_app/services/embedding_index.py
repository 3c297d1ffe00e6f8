"""Each embedding space gets its own partial HNSW index (cosine) over
``embedding::vector(dim)``, so spaces of different dimensions share one table."""
from __future__ import annotations

import hashlib
import re

from django.db import connection

_SAFE_SPACE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


def embedding_index_name(space: str) -> str:
    return "record_embedding_hnsw_" + hashlib.sha256(space.encode()).hexdigest()[:16]


def embedding_space_ensure_index(space: str, dimensions: int) -> None:
    """Create the HNSW index of ``space`` if it does not exist yet. Idempotent."""
    if not _SAFE_SPACE.fullmatch(space) or not 8 <= int(dimensions) <= 4096:
        raise ValueError(f"invalid embedding space {space!r} / {dimensions}")
    with connection.cursor() as cursor:
        # The space name is validated above and quoted as a literal; the dimension is an int.
        cursor.execute(
            f"CREATE INDEX IF NOT EXISTS {embedding_index_name(space)} ON catalog_app_recordembedding "
            f"USING hnsw ((embedding::vector({int(dimensions)})) vector_cosine_ops) "
            f"WHERE space = '{space}'"
        )
