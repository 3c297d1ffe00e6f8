"""Which space a workspace's vectors are served from, and the switch to another runtime.

Invariants (issue #39's zero-downtime re-embedding):

- Every query of a workspace embeds with, and searches in, one runtime: the workspace's serving
  runtime (``EmbeddingSwitch.serving_runtime``), else the process's ``EMBEDDING_RUNTIME``. A
  query reads it once (``serving_config``), so no query mixes runtimes.
- While a switch is pending (``target_runtime`` set), enrichment writes every new vector into
  the serving space and the target space, in one transaction that holds the workspace row
  ``FOR SHARE`` (``write_configs``). The job's start and swap take that row ``FOR NO KEY UPDATE``
  (``lock_workspace_for_switch``), so an enrichment that read the state before either commits
  before it, and one after sees the new state: a record is never left with a serving vector
  and no target vector behind a swap.
- The serving runtime changes only in the swap transaction, which first counts the live
  records with a serving vector and no target vector and swaps only when there are none.
"""
from __future__ import annotations

import dataclasses

from django.db import connection

from .catalog.models_conf import EmbeddingConfig, stored_space
from .models import EmbeddingSwitch, Workspace

_WORKSPACE = Workspace._meta.db_table
_SWITCH = EmbeddingSwitch._meta.db_table


def config_for_runtime(config: EmbeddingConfig, runtime: str) -> EmbeddingConfig:
    """``config`` (the bundled model's, on any runtime) on ``runtime`` instead, with that
    runtime's stored space. Raises ``ValueError`` for a configuration of an HTTP provider, whose
    vectors have no runtime."""
    if config.runtime is None:
        raise ValueError("only the bundled model has a runtime; this configuration embeds over HTTP")
    if runtime == config.runtime:
        return config
    current = config.runtime or "torch"
    base = config.space if current == "torch" else config.space[: -len("." + current)]
    return dataclasses.replace(config, runtime=runtime, space=stored_space(base, runtime))


def serving_config(workspace_id: int, config: EmbeddingConfig) -> EmbeddingConfig:
    """The configuration a query of the workspace embeds with and searches under: ``config``
    (the catalog's, on this process's runtime) on the workspace's serving runtime. One primary-key
    lookup; HTTP providers have no runtime and are returned as they are."""
    if config.runtime is None:
        return config
    runtime = (EmbeddingSwitch.objects.filter(workspace_id=workspace_id)
               .values_list("serving_runtime", flat=True).first())
    return config if runtime is None else config_for_runtime(config, runtime)


def write_configs(configs: dict[int, EmbeddingConfig]) -> dict[int, tuple[EmbeddingConfig, EmbeddingConfig | None]]:
    """For enrichment, inside its transaction: per workspace id of ``configs`` (the catalog's
    configuration of each), ``(serving, target)`` where ``target`` is the pending switch's
    configuration or None. Locks the workspace rows ``FOR SHARE`` until the transaction ends
    (see the module's invariants)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT w.id, s.serving_runtime, s.target_runtime FROM {_WORKSPACE} w "
            f"LEFT JOIN {_SWITCH} s ON s.workspace_id = w.id WHERE w.id = ANY(%s) ORDER BY w.id FOR SHARE OF w",
            [sorted(configs)])
        rows = cursor.fetchall()
    found = {}
    for workspace_id, serving, target in rows:
        config = configs[workspace_id]
        if config.runtime is None:
            found[workspace_id] = (config, None)
            continue
        found[workspace_id] = (config if serving is None else config_for_runtime(config, serving),
                               None if target is None else config_for_runtime(config, target))
    return found


def lock_workspace_for_switch(workspace_id: int) -> EmbeddingSwitch:
    """Inside the caller's transaction: the workspace row ``FOR NO KEY UPDATE`` (waiting for every
    enrichment transaction that read its switch state), then its switch row, created empty when
    missing."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT 1 FROM {_WORKSPACE} WHERE id = %s FOR NO KEY UPDATE", [workspace_id])
        if cursor.fetchone() is None:
            raise Workspace.DoesNotExist(f"no workspace {workspace_id}")
    switch, _ = EmbeddingSwitch.objects.get_or_create(workspace_id=workspace_id)
    return switch


def switch_progress() -> list[dict]:
    """One entry per workspace with a pending switch, by workspace name: ``workspace``,
    ``serving`` and ``target`` runtimes (None serving: the processes' own), ``done``, ``total``,
    ``started_at``."""
    rows = (EmbeddingSwitch.objects.filter(target_runtime__isnull=False).select_related("workspace")
            .order_by("workspace__name"))
    return [{"workspace": row.workspace.name, "serving": row.serving_runtime, "target": row.target_runtime,
             "done": row.records_done, "total": max(row.records_total, row.records_done),
             "started_at": row.started_at} for row in rows]
