"""Filling a new embedding space from an old one (issue #39's re-embedding job, first step).

Contract: ``reembed(workspace_id, source_space, target)`` gives every live record of the
workspace that has a vector in ``source_space`` a vector in ``target.space`` (embedded by
``target``'s runtime or model), in batches of ``batch`` records, one transaction a batch. The
job's state is the embedding table itself: a batch picks records with a source vector and no
target vector, so a run stopped anywhere (a killed process loses at most its uncommitted batch)
resumes where it stopped when run again, and a run over a filled space embeds nothing. A record
written meanwhile by a process on the new runtime already has a target vector and is skipped;
one written by a process on the old runtime is picked by the next batch or the next run. The
target space's HNSW index is ensured after the last batch, so it is built once, not maintained
row by row while the space fills."""
from __future__ import annotations

import time

import dataclasses
from collections.abc import Callable

from django.db import connection, transaction

from ..catalog.hashing import vector_text_and_hash
from ..catalog.models_conf import EmbeddingConfig, stored_space
from ..catalog.runtime import catalog_for_workspace
from ..embedding import embed_texts
from ..models import Workspace
from ..record_sql import EMBEDDING, RECORD, live
from .embedding_index import embedding_space_ensure_index, embeddings_insert


def config_for_runtime(config: EmbeddingConfig, runtime: str) -> EmbeddingConfig:
    """``config`` (the bundled model's, on any runtime) on ``runtime`` instead, with that
    runtime's stored space. Raises ``ValueError`` for a configuration of an HTTP provider, whose
    vectors have no runtime."""
    if config.runtime is None:
        raise ValueError("only the bundled model has a runtime; this configuration embeds over HTTP")
    current = config.runtime or "torch"
    base = config.space if current == "torch" else config.space[: -len("." + current)]
    return dataclasses.replace(config, runtime=runtime, space=stored_space(base, runtime))


def _missing_sql(limit: bool) -> str:
    tail = " ORDER BY r.id LIMIT %s" if limit else ""
    select = "r.id, r.text" if limit else "count(*)"
    return (f"SELECT {select} FROM {EMBEDDING} s JOIN {RECORD} r ON r.id = s.record_id "
            f"WHERE s.workspace_id = %s AND s.space = %s AND {live('r')} "
            f"AND NOT EXISTS (SELECT 1 FROM {EMBEDDING} t WHERE t.record_id = r.id AND t.space = %s)"
            + tail)


def reembed_remaining(*, workspace_id: int, source_space: str, target_space: str) -> int:
    """Live records of the workspace with a vector in ``source_space`` and none in ``target_space``."""
    with connection.cursor() as cursor:
        cursor.execute(_missing_sql(False), [workspace_id, source_space, target_space])
        return cursor.fetchone()[0]


def reembed(*, workspace_id: int, source_space: str, target: EmbeddingConfig, batch: int = 256,
            progress: Callable[[int], None] | None = None, stop_after_s: float | None = None) -> int:
    """Embed the workspace's missing target vectors (see the module's contract); return how many
    were written. ``progress`` is called with each committed batch's count. With ``stop_after_s``
    the run ends after the first batch that commits that many seconds or more after it started,
    leaving the rest (and the index) to the next run. Raises ``EmbeddingUnavailable`` when the
    model fails (the batches committed before stay)."""
    if batch < 1:
        raise ValueError("batch must be at least 1")
    started = time.monotonic()
    written = 0
    while True:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(_missing_sql(True), [workspace_id, source_space, target.space, batch])
                rows = cursor.fetchall()
            if not rows:
                break
            vectors = embed_texts(target, [text for _, text in rows])
            embeddings_insert(space=target.space, record_ids=[row[0] for row in rows],
                              workspace_ids=[workspace_id] * len(rows),
                              vector_texts=[vector_text_and_hash(vector)[0] for vector in vectors])
        written += len(rows)
        if progress is not None:
            progress(len(rows))
        if stop_after_s is not None and time.monotonic() - started >= stop_after_s:
            return written
    embedding_space_ensure_index(target.space, target.dimensions)
    return written


def reembed_plan(workspace: Workspace, runtime: str, source_runtime: str | None = None) -> tuple[str, EmbeddingConfig]:
    """The source space and the target configuration of re-embedding ``workspace`` on
    ``runtime``. The source is ``source_runtime``'s space, by default the one this process embeds
    into (its ``EMBEDDING_RUNTIME``): after a restart on the new runtime, ``source_runtime``
    names the old one, to catch records the old processes wrote after the last run. Raises
    ``ValueError`` when the workspace's model has no runtime (an HTTP provider)."""
    current = catalog_for_workspace(workspace).value("models", "models").embedding
    source = current if source_runtime is None else config_for_runtime(current, source_runtime)
    return source.space, config_for_runtime(current, runtime)
