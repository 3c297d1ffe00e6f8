"""Enrichment: run each processor of a record once, write its result once, mark the record ready.

Invariants:
- Write-once. A processor's annotation, scores and ``annotation_meta`` entry are written only
  while ``annotation_meta`` has no entry of that name (checked inside the UPDATE itself), so
  retries, recoveries and concurrent workers never overwrite a result.
- No double work. Records are claimed with ``SELECT ... FOR UPDATE SKIP LOCKED``; a record
  another worker holds is skipped (that worker finishes it, or its rollback leaves it pending
  for redelivery or recovery). Everything a batch writes commits together.
- Never stuck. An LLM processor whose answer is malformed twice (one corrective retry), or whose
  provider still fails on the final attempt, writes its declared default (status ``default``)
  or, with none declared, a terminal marker (status ``failed``); an embedding that still fails
  on the final attempt writes a terminal marker and no vector. The failure is kept in
  ``enrichment_error[<processor>]``.
- Ready (``enriched_at``) once every required processor of the record's exact collection
  version has an ``annotation_meta`` entry. Client processors are written at ingest, never here.
  The lexical index takes in a record made ready in the transaction that marks it.
"""
from __future__ import annotations

import copy
import logging
import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.db.models import Q
from django.db.models.functions import Abs, Length
from django.utils import timezone
from psycopg.types.json import Jsonb

from memseek_site.conf import memseek_setting
from memseek_site.errors import ApiError

from ..catalog.hashing import definition_hash, vector_text_and_hash
from ..catalog.models_conf import ModelsConfig
from ..catalog.processors import Processor
from ..catalog.registry import Definition
from ..catalog.runtime import catalog_for_workspace
from ..embedding import EmbeddingUnavailable, embed_texts
from ..embedding_serving import write_configs
from ..lexical.maintenance import lexical_lock_lanes, lexical_records_changed
from ..llm import ProviderError, ProviderInvalid
from ..models import Record
from ..record_sql import RECORD
from ..text import truncate_middle
from .embedding_index import embedding_space_ensure_index, embeddings_insert
from .enrichment_llm import processor_ask

logger = logging.getLogger(__name__)

OK, DEFAULT, FAILED = "ok", "default", "failed"
_ERROR_DETAIL_CHARS = 500
_NO_ANNOTATION = object()


@dataclass
class EnrichmentOutcome:
    """What one ``records_enrich`` call did, by record id."""

    written: int = 0  # processor results written
    defaulted: int = 0  # of which fell back to a default or a terminal marker
    ready: list[str] = field(default_factory=list)  # became ready now
    skipped: list[str] = field(default_factory=list)  # missing, tombstone, or held by another worker
    deferred: list[str] = field(default_factory=list)  # a provider failed transiently; try again

    def summary(self) -> dict:
        return {"written": self.written, "defaulted": self.defaulted, "ready": len(self.ready),
                "skipped": len(self.skipped), "deferred": len(self.deferred)}


class EnrichmentDeferred(ApiError):
    """Some records wait for a provider that failed transiently; everything else was written.

    ``record_ids`` are the records to enrich again later (with backoff)."""

    codes = ("enrichment_deferred",)
    outcome: EnrichmentOutcome
    record_ids: list[str]

    @classmethod
    def of(cls, outcome: EnrichmentOutcome) -> EnrichmentDeferred:
        error = cls("enrichment_deferred", f"{len(outcome.deferred)} record(s) wait for a model provider")
        error.outcome, error.record_ids = outcome, list(outcome.deferred)
        return error


@dataclass(frozen=True, slots=True)
class _Result:
    status: str
    output_hash: str | None
    annotation: object = _NO_ANNOTATION
    scores: dict = field(default_factory=dict)
    meta: dict = field(default_factory=dict)  # extra audit members: space, model
    error: dict | None = None


@dataclass(frozen=True, slots=True)
class _Plan:
    record: Record
    required: tuple[str, ...]
    todo: tuple[Definition, ...]  # processor definitions without an annotation_meta entry
    models: ModelsConfig


def records_enrich(*, record_ids: Iterable, final_attempt: bool = True, pool: int = 0) -> EnrichmentOutcome:
    """Run every missing processor of the records ``record_ids`` and mark the complete ones ready.

    Idempotent: processors that already wrote are skipped, so a second call writes nothing.
    The records are handled in transactions of ``ENRICH_BATCH``. With ``pool`` > 0 (a worker),
    claims from the pending pool come first (``_drain_pool``): while any of ``record_ids`` is
    still waiting there, transactions of up to ``ENRICH_CLAIM`` records of similar text length
    from the ``pool`` oldest pending records, so every embedding call pads little and the
    processes of a worker share a burst evenly; the batches of ``record_ids`` then only find
    what is left. With ``final_attempt=False`` a transient provider failure leaves that
    processor unwritten and, after every batch is committed, raises ``EnrichmentDeferred``
    naming the records to retry; with ``final_attempt=True`` (the default) it writes the default
    or terminal marker instead. Returns an ``EnrichmentOutcome``.
    """
    ids = list(dict.fromkeys(str(record_id) for record_id in record_ids))
    outcome = EnrichmentOutcome()
    if pool > 0:
        _drain_pool(ids, pool, outcome)
    size = memseek_setting("ENRICH_BATCH")
    for start in range(0, len(ids), size):
        _enrich_batch(ids[start:start + size], final_attempt, outcome)
    if outcome.deferred and not final_attempt:
        raise EnrichmentDeferred.of(outcome)
    return outcome


def records_recover_pending(*, dispatch: Callable[[list[str]], object], older_than_s: float | None = None,
                            created_after: datetime | None = None, created_until: datetime | None = None) -> int:
    """Hand every record still unready that was inserted at or before ``created_until`` (default
    ``older_than_s`` seconds ago, itself by default ``PENDING_RECOVERY_AGE_S``) and, given
    ``created_after``, after that, to ``dispatch`` in id lists of ``ENRICH_BATCH``, oldest first.

    ``dispatch`` enqueues (the recovery task) or enriches inline (``enrich_pending``). Returns
    the number of records dispatched.
    """
    if created_until is None:
        age = memseek_setting("PENDING_RECOVERY_AGE_S") if older_than_s is None else older_than_s
        created_until = timezone.now() - timedelta(seconds=age)
    size = memseek_setting("ENRICH_BATCH")
    pending = Record.objects.filter(enriched_at__isnull=True, tombstone=False, created_at__lte=created_until)
    if created_after is not None:
        pending = pending.filter(created_at__gt=created_after)
    last_seq, count = None, 0
    while True:
        page = pending if last_seq is None else pending.filter(seq__gt=last_seq)
        rows = list(page.order_by("seq").values_list("seq", "id")[:size])
        if not rows:
            return count
        dispatch([str(record_id) for _, record_id in rows])
        count += len(rows)
        last_seq = rows[-1][0]


def _claimable():
    return Record.objects.select_for_update(skip_locked=True, of=("self",)).select_related("workspace")


def _in_pool() -> Q:
    """Pending records a worker may take along: younger than ``PENDING_RECOVERY_AGE_S`` and
    without a recorded failure, so a record waiting for a provider keeps its retry backoff and
    old ones stay with the recovery scan."""
    cutoff = timezone.now() - timedelta(seconds=memseek_setting("PENDING_RECOVERY_AGE_S"))
    return (Q(enriched_at__isnull=True, tombstone=False, created_at__gt=cutoff)
            & (Q(enrichment_error__isnull=True) | Q(enrichment_error={})))


def _drain_pool(ids: list[str], window: int, outcome: EnrichmentOutcome) -> None:
    """Enrich claims from the pending pool (``_claim_from_pool``) while any of ``ids`` waits
    there, at most ``window + len(ids)`` records in all. Pool records are never on their final
    attempt: a transient provider failure leaves them pending for their own tasks (it is not
    reported as deferred here) and ends the drain."""
    size = memseek_setting("ENRICH_CLAIM")
    budget = window + len(ids)
    while budget > 0 and Record.objects.filter(_in_pool(), pk__in=ids).exists():
        claim = EnrichmentOutcome()
        claimed = _enrich_pool_claim(window, min(size, budget), claim)
        outcome.written += claim.written
        outcome.defaulted += claim.defaulted
        outcome.ready += claim.ready
        if claimed == 0 or claim.deferred:
            return
        budget -= claimed


@transaction.atomic
def _enrich_pool_claim(window: int, size: int, outcome: EnrichmentOutcome) -> int:
    records = _claim_from_pool(window, size)
    _enrich_claimed(records, final_attempt=False, outcome=outcome)
    return len(records)


def _claim_from_pool(window: int, size: int) -> list[Record]:
    """Lock up to ``size`` pool records no one holds: the oldest (so none waits long behind
    newer ones) and those nearest to it in text length among the ``window`` oldest pool records,
    so the embedding calls of a small claim pad about as little as those of one
    large claim, and the processes of a worker finish a burst together."""
    anchor = _claimable().filter(_in_pool()).annotate(chars=Length("text")).order_by("seq").first()
    if anchor is None:
        return []
    # The window's ids are read first: as a subquery the planner, misled by a pending set that
    # changes faster than its statistics, may run it once per candidate row.
    oldest = list(Record.objects.filter(_in_pool()).order_by("seq").values_list("pk", flat=True)[:window])
    nearest = (_claimable().filter(_in_pool(), pk__in=oldest).exclude(pk=anchor.pk)
               .annotate(distance=Abs(Length("text") - anchor.chars)).order_by("distance", "seq")[:size - 1])
    return sorted([anchor, *nearest], key=lambda record: record.seq)


@transaction.atomic
def _enrich_batch(ids: list[str], final_attempt: bool, outcome: EnrichmentOutcome) -> None:
    records = list(_claimable().filter(pk__in=ids, tombstone=False).order_by("seq"))
    claimed = {str(record.pk) for record in records}
    outcome.skipped += [record_id for record_id in ids if record_id not in claimed]
    _enrich_claimed(records, final_attempt, outcome)


def _enrich_claimed(records: list[Record], final_attempt: bool, outcome: EnrichmentOutcome) -> None:
    """Run the missing processors of ``records`` (locked by the caller's transaction) and write
    every result in one round trip."""
    plans = [plan for record in records if (plan := _plan(record)) is not None]
    results: dict[str, dict[str, _Result]] = {str(plan.record.pk): {} for plan in plans}
    _run_embeddings(plans, results, final_attempt)
    for plan in plans:
        for definition in plan.todo:
            processor = definition.value
            if processor.kind == "embedding":
                continue
            if processor.source == "constant":
                result = _constant_result(processor)
            else:
                result = _llm_result(processor, plan, final_attempt)
            if result is not None:
                results[str(plan.record.pk)][processor.name] = result
    writes, unwritten = [], []
    for plan in plans:
        record_id = str(plan.record.pk)
        mine = results[record_id]
        if mine:
            # The rows are locked (``_claimable``), so the stored meta plus this write decides readiness.
            ready = plan.record.enriched_at is None and set(plan.required) <= {*plan.record.annotation_meta, *mine}
            writes.append((plan, mine, ready))
            outcome.written += len(mine)
            outcome.defaulted += sum(result.status != OK for result in mine.values())
            if ready:
                outcome.ready.append(record_id)
        else:
            unwritten.append(plan)
        if len(mine) < len(plan.todo):
            outcome.deferred.append(record_id)
    _write(writes, timezone.now().isoformat())
    marked = _mark_ready(unwritten)
    outcome.ready += marked
    # Readiness can make a record visible: the lexical index follows in this same transaction.
    now_ready = [plan.record.pk for plan, _, ready in writes if ready] + marked
    if now_ready:
        lexical_lock_lanes(record_ids=now_ready)
        lexical_records_changed(record_ids=now_ready, inserted=False)


def _plan(record: Record) -> _Plan | None:
    catalog = catalog_for_workspace(record.workspace)
    collection = catalog.value("collection", record.collection, record.collection_version)
    if collection is None:
        logger.warning("record %s: collection %s@%s is not in the catalog of %s; not enriched", record.pk,
                       record.collection, record.collection_version, record.workspace.name)
        return None
    todo = []
    for name in collection.processors:
        if name in record.annotation_meta:
            continue
        definition = catalog.get("processor", name)
        if definition is None:
            logger.warning("record %s: processor %s is not in the catalog; not run", record.pk, name)
            continue
        processor = definition.value
        if processor.source != "client" and processor.applies_to(record.type):
            todo.append(definition)
    return _Plan(record, collection.required_processors, tuple(todo), catalog.value("models", "models"))


def _run_embeddings(plans: list[_Plan], results: dict, final_attempt: bool) -> None:
    """One ``embed_texts`` call per embedding configuration for the whole batch: each record's
    vector in its workspace's serving space, and in the target space too while a switch is
    pending (``write_configs``, which holds the workspaces' switch state until the caller's
    transaction ends). The result names the serving space; the target space's index is left to
    the re-embedding job, which builds it concurrently once the space is full."""
    wanted = [(plan, definition) for plan in plans for definition in plan.todo
              if definition.value.kind == "embedding"]
    if not wanted:
        return
    configs = write_configs({plan.record.workspace_id: plan.models.embedding for plan, _ in wanted})
    groups: dict = defaultdict(list)
    shadows: dict = defaultdict(list)
    for plan, definition in wanted:
        serving, target = configs[plan.record.workspace_id]
        groups[serving].append((plan, definition))
        if target is not None:
            shadows[target].append(plan)
    for config, pairs in groups.items():
        unique = list({plan.record.pk: plan for plan, _ in pairs}.values())
        try:
            vectors = embed_texts(config, [plan.record.text for plan in unique])
        except EmbeddingUnavailable as error:
            logger.warning("embedding %d record(s) into %s failed: %s", len(unique), config.space, error.detail)
            if final_attempt:
                for plan, definition in pairs:
                    results[str(plan.record.pk)][definition.name] = _Result(
                        FAILED, None, meta={"space": config.space}, error=_error(error))
            continue
        texts_and_hashes = {plan.record.pk: vector_text_and_hash(vector) for plan, vector in zip(unique, vectors)}
        embedding_space_ensure_index(config.space, config.dimensions)
        _insert_embeddings(unique, config.space, texts_and_hashes)
        for plan, definition in pairs:
            results[str(plan.record.pk)][definition.name] = _Result(
                OK, texts_and_hashes[plan.record.pk][1], meta={"space": config.space})
    for config, shadow_plans in shadows.items():
        # A failure here leaves records with a serving vector and no target vector: the job's
        # fill step embeds them, and its swap waits for them, so nothing is lost but time.
        unique = list({plan.record.pk: plan for plan in shadow_plans}.values())
        try:
            vectors = embed_texts(config, [plan.record.text for plan in unique])
        except EmbeddingUnavailable as error:
            logger.warning("embedding %d record(s) into the pending space %s failed: %s", len(unique),
                           config.space, error.detail)
            continue
        _insert_embeddings(unique, config.space,
                           {plan.record.pk: vector_text_and_hash(vector) for plan, vector in zip(unique, vectors)})


def _insert_embeddings(plans: list[_Plan], space: str, texts_and_hashes: dict) -> None:
    embeddings_insert(space=space, record_ids=[plan.record.pk for plan in plans],
                      workspace_ids=[plan.record.workspace_id for plan in plans],
                      vector_texts=[texts_and_hashes[plan.record.pk][0] for plan in plans])


def _constant_result(processor: Processor) -> _Result:
    if processor.kind == "score":
        return _score_result(processor, processor.value, OK)
    return _json_result(processor, processor.default_output, OK)


def _score_result(processor: Processor, score: float, status: str, **extra) -> _Result:
    value = float(processor.clamp(score))
    annotation = {"value": value}
    return _Result(status, definition_hash(annotation), annotation, {processor.name: value}, **extra)


def _json_result(processor: Processor, value, status: str, **extra) -> _Result:
    value = copy.deepcopy(value)
    return _Result(status, definition_hash(value), value, _promoted_scores(processor, value), **extra)


def _promoted_scores(processor: Processor, value) -> dict:
    """``score_fields`` leaves of ``value`` that hold finite numbers, as floats."""
    scores = {}
    for score_name, dotted in processor.score_fields.items():
        leaf = value
        for part in dotted.split("."):
            leaf = leaf.get(part) if isinstance(leaf, dict) else None
        if isinstance(leaf, (int, float)) and not isinstance(leaf, bool) and math.isfinite(leaf):
            scores[score_name] = float(leaf)
    return scores


def _llm_result(processor: Processor, plan: _Plan, final_attempt: bool) -> _Result | None:
    text = truncate_middle(plan.record.text, memseek_setting("SCORER_TEXT_CHARS"))
    try:
        value, target = processor_ask(processor, plan.models, text)
    except ProviderInvalid as error:
        return _fallback(processor, error)
    except ProviderError as error:
        if not final_attempt:
            logger.warning("record %s: %s deferred: %s", plan.record.pk, processor.name, error.detail)
            return None
        return _fallback(processor, error)
    if processor.kind == "score":
        return _score_result(processor, value, OK, meta={"model": target})
    return _json_result(processor, value, OK, meta={"model": target})


def _fallback(processor: Processor, error: ProviderError) -> _Result:
    logger.warning("%s falls back to its default: %s", processor.name, error.detail)
    if processor.kind == "score":
        return _score_result(processor, processor.default, DEFAULT, error=_error(error))
    if processor.default_output is not None:
        return _json_result(processor, processor.default_output, DEFAULT, error=_error(error))
    return _Result(FAILED, None, error=_error(error))


def _error(error: ProviderError) -> dict:
    return {"code": error.code, "detail": error.detail[:_ERROR_DETAIL_CHARS], "at": timezone.now().isoformat()}


# Each member is merged only while annotation_meta has no entry of that processor; annotations
# additionally never replace an existing key.
_WRITE_ONCE = f"UPDATE {RECORD} AS r SET" + """
  annotations = r.annotations || COALESCE((
    SELECT jsonb_object_agg(p.key, p.value -> 'annotation') FROM jsonb_each(%(payload)s) AS p
    WHERE p.value ? 'annotation' AND NOT r.annotation_meta ? p.key AND NOT r.annotations ? p.key), '{}'::jsonb),
  scores = r.scores || COALESCE((
    SELECT jsonb_object_agg(s.key, s.value) FROM jsonb_each(%(payload)s) AS p, jsonb_each(p.value -> 'scores') AS s
    WHERE NOT r.annotation_meta ? p.key), '{}'::jsonb),
  annotation_meta = r.annotation_meta || COALESCE((
    SELECT jsonb_object_agg(p.key, p.value -> 'meta') FROM jsonb_each(%(payload)s) AS p
    WHERE NOT r.annotation_meta ? p.key), '{}'::jsonb),
  enrichment_error = COALESCE(
    CASE WHEN jsonb_typeof(r.enrichment_error) = 'object' THEN r.enrichment_error ELSE '{}'::jsonb END || (
      SELECT jsonb_object_agg(p.key, p.value -> 'error') FROM jsonb_each(%(payload)s) AS p
      WHERE p.value ? 'error' AND NOT r.annotation_meta ? p.key),
    r.enrichment_error),
  enriched_at = CASE WHEN %(ready)s AND r.enriched_at IS NULL THEN now() ELSE r.enriched_at END
WHERE r.id = %(id)s
"""


def _write(writes: list[tuple[_Plan, dict[str, _Result], bool]], now: str) -> None:
    """Each record's results in one write-once UPDATE that also marks it ready when the flag says
    so (one new row version, so the record's indexes are updated once), the whole batch in one
    pipelined round trip."""
    if writes:
        with connection.cursor() as cursor:
            cursor.executemany(_WRITE_ONCE, [{"payload": Jsonb(_payload(plan, results, now)), "id": plan.record.pk,
                                              "ready": ready} for plan, results, ready in writes])


def _payload(plan: _Plan, results: dict[str, _Result], now: str) -> dict:
    definitions = {definition.name: definition for definition in plan.todo}
    payload = {}
    for name, result in results.items():
        processor = definitions[name].value
        meta = {"completed_at": now, "config_hash": definitions[name].hash, "output_hash": result.output_hash,
                "status": result.status, "source": processor.source or processor.kind, **result.meta}
        entry = {"meta": meta, "scores": result.scores}
        if result.annotation is not _NO_ANNOTATION:
            entry["annotation"] = result.annotation
        if result.error is not None:
            entry["error"] = result.error
        payload[name] = entry
    return payload


def _mark_ready(plans: list[_Plan]) -> list[str]:
    by_required: dict[tuple, list] = defaultdict(list)
    for plan in plans:
        if plan.record.enriched_at is None:
            by_required[plan.required].append(plan.record.pk)
    ready = []
    with connection.cursor() as cursor:
        for required, ids in by_required.items():
            cursor.execute(f"UPDATE {RECORD} SET enriched_at = now() WHERE id = ANY(%s) "
                           "AND enriched_at IS NULL AND annotation_meta ?& %s::text[] RETURNING id",
                           [ids, list(required)])
            ready += [str(row[0]) for row in cursor.fetchall()]
    return ready
