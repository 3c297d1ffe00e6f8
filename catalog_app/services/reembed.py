"""Switching a workspace's vectors to another runtime without downtime (issue #39).

Contract of ``reembed_switch(workspace, runtime)``:

1. Start: under the workspace's switch lock (``embedding_serving``), the serving runtime is
   pinned (the process's own when none was recorded) and the target recorded. From then on
   enrichment writes each new vector into both spaces, and queries keep reading the serving one.
2. Fill: batches of live records with a serving vector and no target vector are embedded by the
   target runtime, one transaction a batch, which also counts them into the switch's progress.
   The job's state is the embedding table itself, so a run stopped anywhere (a killed process
   loses at most its uncommitted batch) resumes where it stopped when run again.
3. Index: the target space's HNSW index is built with ``CREATE INDEX CONCURRENTLY`` once the
   space is full, so it is built once and writes are never blocked.
4. Swap: under the switch lock, the missing records are counted; with none, the serving runtime
   becomes the target in that one transaction. Otherwise (records written by a process that read
   the state before the start) it fills again.

The old space's vectors are kept: switching back re-embeds nothing that is still there."""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from ..catalog.hashing import vector_text_and_hash
from ..catalog.models_conf import EmbeddingConfig
from ..catalog.runtime import catalog_for_workspace
from ..embedding import embed_texts
from ..embedding_serving import config_for_runtime, lock_workspace_for_switch  # noqa: F401 (re-exported)
from ..models import EmbeddingSwitch, Workspace
from ..onnx_encoder import RUNTIMES
from ..record_sql import EMBEDDING, RECORD, live
from .embedding_index import embedding_space_ensure_index_concurrently, embeddings_insert

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
    """Fill step: embed the workspace's missing target vectors, one transaction a batch (which
    also adds its count to the workspace's ``EmbeddingSwitch.records_done``, when it has one);
    return how many were written. ``progress`` is called with each committed batch's count. With
    ``stop_after_s`` the run ends after the first batch that commits that many seconds or more
    after it started. Raises ``EmbeddingUnavailable`` when the model fails (the batches committed
    before stay)."""
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
                return written
            vectors = embed_texts(target, [text for _, text in rows])
            embeddings_insert(space=target.space, record_ids=[row[0] for row in rows],
                              workspace_ids=[workspace_id] * len(rows),
                              vector_texts=[vector_text_and_hash(vector)[0] for vector in vectors])
            EmbeddingSwitch.objects.filter(workspace_id=workspace_id).update(
                records_done=F("records_done") + len(rows))
        written += len(rows)
        if progress is not None:
            progress(len(rows))
        if stop_after_s is not None and time.monotonic() - started >= stop_after_s:
            return written


@dataclasses.dataclass(frozen=True, slots=True)
class SwitchOutcome:
    """What one run of ``reembed_switch`` did: the spaces, the vectors it wrote, and whether the
    workspace now serves from the target (False: stopped by ``stop_after_s``; run it again)."""

    source_space: str
    target_space: str
    written: int
    swapped: bool


def reembed_plan(workspace: Workspace, runtime: str) -> tuple[EmbeddingConfig, EmbeddingConfig]:
    """``(serving, target)`` configurations of switching ``workspace`` to ``runtime``, without
    starting it. Raises ``ValueError`` when the workspace's model has no runtime (an HTTP
    provider)."""
    current = catalog_for_workspace(workspace).value("models", "models").embedding
    target = config_for_runtime(current, runtime)
    serving = (EmbeddingSwitch.objects.filter(workspace=workspace).values_list("serving_runtime", flat=True).first()
               or current.runtime)
    return config_for_runtime(current, serving), target


def reembed_switch(workspace: Workspace, runtime: str, *, batch: int = 256,
                   progress: Callable[[int, int], None] | None = None,
                   stop_after_s: float | None = None) -> SwitchOutcome:
    """Switch ``workspace`` to ``runtime`` (the module's contract): start (or resume) the switch,
    fill, index, swap. ``progress(done, total)`` is called after the start and each batch. With
    ``stop_after_s`` the run stops after a batch past that time, the switch left pending for the
    next run. Raises ``ValueError`` for a model without a runtime, an unknown runtime or a batch
    below 1 (before recording anything),
    ``EmbeddingUnavailable`` when the model fails; what was committed stays either way."""
    if batch < 1:
        raise ValueError("batch must be at least 1")
    if runtime not in RUNTIMES:
        raise ValueError(f"runtime must be one of {', '.join(RUNTIMES)}, not {runtime!r}")
    serving, target = reembed_plan(workspace, runtime)
    started = time.monotonic()
    switch, serving = _start(workspace.pk, serving, target)
    written = 0
    while True:
        if switch.target_runtime != target.runtime:  # swapped, or another run replaced the target
            return SwitchOutcome(serving.space, target.space, written,
                                 swapped=switch.serving_runtime == target.runtime)
        done, total = switch.records_done, switch.records_total
        if progress is not None:
            progress(done, total)

        def counted(count: int) -> None:
            nonlocal done
            done += count
            if progress is not None:
                progress(done, max(total, done))

        left = None if stop_after_s is None else max(0.0, stop_after_s - (time.monotonic() - started))
        written += reembed(workspace_id=workspace.pk, source_space=serving.space, target=target, batch=batch,
                           progress=counted, stop_after_s=left)
        if stop_after_s is not None and time.monotonic() - started >= stop_after_s:
            return SwitchOutcome(serving.space, target.space, written, swapped=False)
        embedding_space_ensure_index_concurrently(target.space, target.dimensions)
        switch = _swap(workspace.pk, serving, target)


def _start(workspace_id: int, serving: EmbeddingConfig,
           target: EmbeddingConfig) -> tuple[EmbeddingSwitch, EmbeddingConfig]:
    """The switch recorded (or resumed) and the serving configuration as recorded under the lock
    (another run may have swapped since ``serving`` was read)."""
    with transaction.atomic():
        switch = lock_workspace_for_switch(workspace_id)
        if switch.serving_runtime is not None:
            serving = config_for_runtime(serving, switch.serving_runtime)
        if target.runtime == serving.runtime:
            switch.serving_runtime, switch.target_runtime = serving.runtime, None
            switch.save()
            return switch, serving
        if switch.target_runtime != target.runtime:
            switch.records_done, switch.started_at, switch.swapped_at = 0, timezone.now(), None
        switch.serving_runtime, switch.target_runtime = serving.runtime, target.runtime
        switch.records_total = switch.records_done + reembed_remaining(
            workspace_id=workspace_id, source_space=serving.space, target_space=target.space)
        switch.save()
        return switch, serving


def _swap(workspace_id: int, serving: EmbeddingConfig, target: EmbeddingConfig) -> EmbeddingSwitch:
    """The one transaction that makes ``target`` the serving runtime, when no record is missing."""
    with transaction.atomic():
        switch = lock_workspace_for_switch(workspace_id)
        if (switch.serving_runtime, switch.target_runtime) != (serving.runtime, target.runtime):
            return switch  # another run swapped or replaced the target meanwhile
        missing = reembed_remaining(workspace_id=workspace_id, source_space=serving.space, target_space=target.space)
        if missing:
            switch.records_total = switch.records_done + missing
        else:
            switch.serving_runtime, switch.target_runtime, switch.swapped_at = target.runtime, None, timezone.now()
        switch.save()
        return switch
