"""The lexical index's compaction as a Celery task, and its enqueueing after a commit: what
``maintenance`` asks for when a write leaves a workspace due for compaction. Its own module so
that ``maintenance`` reaches the task without importing ``catalog_app.tasks`` (which imports the
services that import ``maintenance``)."""
from __future__ import annotations

from collections.abc import Iterable
from functools import partial

from django.db import InterfaceError, OperationalError, transaction

from ..task_base import memseek_task
from .compaction import lexical_compact


@memseek_task(name="catalog_app.tasks.compact_lexical_index", ignore_result=True,
              autoretry_for=(OperationalError, InterfaceError), max_retries=3, retry_backoff=5)
def compact_lexical_index(workspace_id: int) -> bool:
    """Fold the workspace's logged posting changes into its blocks (``lexical_compact``); False
    when another compaction of it was running."""
    return lexical_compact(workspace_id=workspace_id) is not None


def enqueue_lexical_compaction(workspace_ids: Iterable[int]) -> None:
    """Enqueue a compaction of each of ``workspace_ids`` once the current transaction commits.
    A broker failure is logged, not raised: queries stay exact without it (they read the
    logged changes from the pending rows), only slower, and the next write asks again."""
    for workspace_id in workspace_ids:
        transaction.on_commit(partial(compact_lexical_index.delay, workspace_id), robust=True)
