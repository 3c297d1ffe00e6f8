"""Forgetting for good: ``DELETE /records/{id}`` and ``POST /erase`` (one entity).

Invariant: an erasure is a hard delete, not a tombstone. What it removes is closed under the
two relations that would otherwise keep a trace of the erased records:

* **slots**: a keyed record takes every row of its slot (workspace, entity, collection, key), in
  both the active and the draft lane, so no older version or pending draft of it survives and
  no older version becomes current again;
* **lineage**: a record derived from an erased one is erased too (with its slot), to any depth.

Every row goes in one transaction: the records, their vectors, review audits, their lexical
index documents, postings and statistics (``lexical_records_erased``), and what the apps above
hold about them (registered with ``erasure_participant_register``: receipts keep the erased
ids only, marked erased). An ``ErasureAudit`` row says who (the key id), when, and how many rows
of what; it names no entity and no record. A dry run counts the same rows and changes nothing.

Concurrency: the transaction takes the workspace's write lock exclusively (ingest takes it
shared), so no write, review or lane reconcile of the workspace runs beside it, then locks the
rows ``NOWAIT``: an enrichment that claimed one of them first waits for the workspace lock, so
waiting for its row would deadlock; the erasure steps back instead, and retries a few times
before answering ``503 erasure_busy``.
"""
from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.db import OperationalError, connection, transaction
from psycopg.errors import LockNotAvailable

from memseek_site.errors import ApiError

from ..lexical.maintenance import lexical_records_erased
from ..lexical.tables import DOCUMENT
from ..models import ErasureAudit, Record, RecordEmbedding, ReviewAudit, Workspace
from ..record_sql import RECORD, id_array
from ..write_locks import workspace_lock_exclusive

_LOCK_TRIES = 5
_LOCK_PAUSE_S = 0.2

# (workspace id, erased record ids, dry run) -> {what: rows}, run inside the erasure's transaction.
Participant = Callable[[int, Sequence[uuid.UUID], bool], dict[str, int]]
_participants: list[Participant] = []


def erasure_participant_register(participant: Participant) -> None:
    """Let an app above this one count (dry run) or erase (otherwise) what it holds about the
    erased records; called once from its ``AppConfig.ready``."""
    if participant not in _participants:
        _participants.append(participant)


@dataclass(frozen=True, slots=True)
class ErasureTarget:
    """One record (``record_id``) or one entity (``entity``, optionally in one ``collection``)."""

    record_id: uuid.UUID | None = None
    entity: str | None = None
    collection: str | None = None


@dataclass(frozen=True, slots=True)
class ErasureResult:
    dry_run: bool
    counts: dict[str, int]
    audit_id: int | None


def records_erase(*, workspace: Workspace, target: ErasureTarget, actor_key_id: int | None,
                  dry_run: bool) -> ErasureResult:
    """Erase (or with ``dry_run`` count) ``target`` in ``workspace`` and everything of it.

    Raises ``ApiError('record_not_found')`` for a record id the workspace does not hold (another
    workspace's too) and ``ApiError('erasure_busy')`` when its rows stay claimed by a worker."""
    if dry_run:
        ids, seqs = _selection(workspace.pk, target)
        return ErasureResult(True, _counts(workspace.pk, ids, seqs, dry_run=True), None)
    for attempt in range(_LOCK_TRIES):
        try:
            with transaction.atomic():
                return _erase(workspace, target, actor_key_id)
        except OperationalError as error:
            if not isinstance(error.__cause__, LockNotAvailable):
                raise
        time.sleep(_LOCK_PAUSE_S * (attempt + 1))
    raise ApiError("erasure_busy", "A worker holds some of these records; send the erasure again in a moment.")


def _erase(workspace: Workspace, target: ErasureTarget, actor_key_id: int | None) -> ErasureResult:
    with connection.cursor() as cursor:
        workspace_lock_exclusive(cursor, workspace.pk)
        ids, seqs = _selection(workspace.pk, target)
        cursor.execute(f"SELECT 1 FROM {RECORD} WHERE seq = ANY(%s::bigint[]) FOR UPDATE NOWAIT", [id_array(seqs)])
        counts = _counts(workspace.pk, ids, seqs, dry_run=False)
        if ids:
            lexical_records_erased(cursor, workspace_id=workspace.pk, seqs=seqs)
            RecordEmbedding.objects.filter(record_id__in=ids).delete()
            ReviewAudit.objects.filter(workspace=workspace, record_id__in=ids).delete()
            ReviewAudit.objects.filter(workspace=workspace, draft_id__in=ids).delete()
            cursor.execute(f"DELETE FROM {RECORD} WHERE seq = ANY(%s::bigint[])", [id_array(seqs)])
    audit = ErasureAudit.objects.create(workspace=workspace, actor_key_id=actor_key_id,
                                        kind="record" if target.record_id else "entity",
                                        collection=target.collection or "", counts=counts)
    return ErasureResult(False, counts, audit.pk)


def _selection(workspace_id: int, target: ErasureTarget) -> tuple[list[uuid.UUID], list[int]]:
    """The ids and seqs of every record the erasure of ``target`` removes (module doc)."""
    rows = Record.objects.filter(workspace_id=workspace_id)
    if target.record_id is not None:
        seed = rows.filter(pk=target.record_id)
        if not seed.exists():
            raise ApiError("record_not_found", f"No record {target.record_id} in this workspace.", path="id")
    else:
        seed = rows.filter(entity=target.entity)
        if target.collection is not None:
            seed = seed.filter(collection=target.collection)
    chosen = dict(seed.values_list("id", "seq"))
    with connection.cursor() as cursor:
        new = list(chosen)
        while new:
            # Whole slots of the new ones, and what derives from them; repeated until nothing is added.
            cursor.execute(
                f"WITH n AS (SELECT * FROM {RECORD} WHERE id = ANY(%s::uuid[])) "
                f"SELECT s.id, s.seq FROM {RECORD} s JOIN n ON s.workspace_id = n.workspace_id "
                "AND s.entity = n.entity AND s.collection = n.collection AND s.key = n.key "
                f"UNION SELECT d.id, d.seq FROM {RECORD} d WHERE d.workspace_id = %s "
                "AND d.derived_from && %s::uuid[]", [id_array(new), workspace_id, id_array(new)])
            found = dict(cursor.fetchall())
            new = [record_id for record_id in found if record_id not in chosen]
            chosen.update(found)
    ids = sorted(chosen)
    return ids, sorted(chosen[record_id] for record_id in ids)


def _counts(workspace_id: int, ids: list[uuid.UUID], seqs: list[int], *, dry_run: bool) -> dict[str, int]:
    """How many rows of what the erasure of ``ids`` removes (or, for the participants, marks)."""
    records = Record.objects.filter(pk__in=ids)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {DOCUMENT} WHERE seq = ANY(%s::bigint[])", [id_array(seqs)])
        documents = cursor.fetchone()[0]
    counts = {
        "records": len(ids),
        "drafts": records.filter(status="draft").count(),
        "derived": records.exclude(derived_from=[]).count(),
        "embeddings": RecordEmbedding.objects.filter(record_id__in=ids).count(),
        "index_documents": documents,
        "review_audits": ReviewAudit.objects.filter(workspace_id=workspace_id, record_id__in=ids).count()
        + ReviewAudit.objects.filter(workspace_id=workspace_id, draft_id__in=ids)
        .exclude(record_id__in=ids).count(),
    }
    for participant in _participants:
        counts.update(participant(workspace_id, ids, dry_run))
    return counts
