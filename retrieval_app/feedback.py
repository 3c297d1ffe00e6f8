"""Receipt feedback and the learned utility it feeds (``POST /receipts/{id}/feedback``).

Body (camelCase, strict: unknown keys are ``422 request_schema`` with their path)::

    {outcome: success | failure | partial | irrelevant,
     score?: 0..1          (default: success 1, partial 0.5, failure 0, irrelevant 0),
     recordIds?: [id, ...] (delivered ids of the receipt; default: every delivered id),
     comment?: <= 2000 characters, dedupeKey?: <= 200 characters}

Invariants:

* Feedback is about what the receipt delivered: an id the receipt does not name is ``422
  record_not_in_receipt`` at ``recordIds[i]``; another workspace's receipt looks missing
  (``404 receipt_not_found``).
* ``dedupeKey`` is scoped to the receipt. Repeating it with the same effective payload (outcome,
  score, the set of record ids and comment, after defaults) returns the stored feedback and
  changes nothing; a different payload is ``409 dedupe_conflict``.
* Learned utility is maintained, not computed at query time: each feedback row adds one outcome
  to ``RecordUtility(n, total)`` of each of its records in the same transaction (an upsert with
  relative increments, ids in sorted order so concurrent feedback cannot deadlock). A record's
  utility is the posterior mean of its scores under a Beta(1, 1) prior, ``(total + 1) / (n +
  2)``: one success moves it from the neutral 0.5 to 2/3, not to 1, and it converges to the mean
  score as outcomes accumulate. Records without feedback have no utility (scoring uses 0.5).
  ``record_utility_rebuild`` recomputes the aggregate from the feedback rows.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.db import IntegrityError, connection, transaction

from memseek_site.errors import ApiError
from memseek_site.parsing import at, fail, parse_list, parse_number, parse_object, parse_string, parse_uuid

from catalog_app.write_locks import workspace_lock_shared

from .erasure import is_erased
from .models import Feedback, Receipt, RecordUtility

OUTCOME_SCORES = {"success": 1.0, "partial": 0.5, "failure": 0.0, "irrelevant": 0.0}
COMMENT_CHARS = 2000
DEDUPE_CHARS = 200
MAX_RECORD_IDS = 1000
PRIOR_WEIGHT = 2.0  # Beta(1, 1): one pseudo-success and one pseudo-failure
PRIOR_MEAN = 0.5
_KEYS = {"outcome", "score", "recordIds", "comment", "dedupeKey"}


@dataclass(frozen=True, slots=True)
class FeedbackRequest:
    outcome: str
    score: float
    record_ids: tuple[str, ...] | None  # canonical UUID strings; None: every delivered id
    comment: str
    dedupe_key: str | None


def parse_feedback_request(raw) -> FeedbackRequest:
    """Parse a feedback body; raises ``ApiError('request_schema')`` with the camelCase path."""
    doc = parse_object(raw, "", allowed=_KEYS, required=("outcome",))
    outcome = parse_string(doc["outcome"], "outcome")
    if outcome not in OUTCOME_SCORES:
        raise fail("outcome", f"must be one of {', '.join(OUTCOME_SCORES)}")
    score = OUTCOME_SCORES[outcome]
    if "score" in doc:
        score = parse_number(doc["score"], "score")
        if not 0 <= score <= 1:
            raise fail("score", f"must lie between 0 and 1, got {score}")
    record_ids = None
    if "recordIds" in doc:
        items = parse_list(doc["recordIds"], "recordIds", min_items=1, max_items=MAX_RECORD_IDS)
        record_ids = tuple(str(parse_uuid(item, at("recordIds", index))) for index, item in enumerate(items))
        seen: set[str] = set()
        for index, record_id in enumerate(record_ids):
            if record_id in seen:
                raise fail(at("recordIds", index), f"{record_id} is listed twice")
            seen.add(record_id)
    comment = parse_string(doc["comment"], "comment", max_length=COMMENT_CHARS, allow_blank=True) \
        if "comment" in doc else ""
    dedupe_key = parse_string(doc["dedupeKey"], "dedupeKey", max_length=DEDUPE_CHARS) if "dedupeKey" in doc else None
    return FeedbackRequest(outcome, score, record_ids, comment, dedupe_key)


def receipt_feedback_create(*, workspace, receipt_id: uuid.UUID, body) -> tuple[dict, bool]:
    """Record feedback on a receipt and update the learned utility of its records.

    Returns ``(payload, created)``; ``created`` is False when ``dedupeKey`` matched stored
    feedback with the same payload. Raises ``ApiError`` (``request_schema``,
    ``receipt_not_found``, ``record_not_in_receipt``, ``dedupe_conflict``)."""
    request = parse_feedback_request(body)
    try:
        with transaction.atomic():
            # The shared workspace lock orders this write after a running erasure (which takes it
            # exclusively): the receipt read below then shows the records it erased as erased.
            with connection.cursor() as cursor:
                workspace_lock_shared(cursor, workspace.pk)
            receipt = Receipt.objects.filter(workspace=workspace, pk=receipt_id).first()
            if receipt is None:
                raise ApiError("receipt_not_found", f"No receipt {receipt_id} in this workspace.", path="id")
            record_ids = _named_records(receipt, request)
            if request.dedupe_key is not None:
                existing = Feedback.objects.filter(receipt=receipt, dedupe_key=request.dedupe_key).first()
                if existing is not None:
                    return _replayed(existing, request, record_ids), False
            feedback = Feedback.objects.create(workspace=workspace, receipt=receipt, outcome=request.outcome,
                                               score=request.score, record_ids=list(record_ids),
                                               comment=request.comment, dedupe_key=request.dedupe_key)
            _add_outcome(workspace.pk, record_ids, request.score)
    except IntegrityError:
        # A concurrent call with the same dedupeKey won the race; answer as its replay.
        if request.dedupe_key is None:
            raise
        existing = Feedback.objects.filter(receipt_id=receipt_id, dedupe_key=request.dedupe_key).first()
        if existing is None:
            raise
        return _replayed(existing, request, _named_records(existing.receipt, request)), False
    return feedback_payload(feedback, deduplicated=False), True


def _named_records(receipt: Receipt, request: FeedbackRequest) -> tuple[str, ...]:
    """The records the feedback is about: those it names, each one the receipt delivered and not
    erased since, or else every such record of the receipt."""
    delivered = list(dict.fromkeys(item["id"] for item in receipt.items if not is_erased(item)))
    if request.record_ids is None:
        return tuple(delivered)
    known = set(delivered)
    for index, record_id in enumerate(request.record_ids):
        if record_id not in known:
            raise ApiError("record_not_in_receipt", f"record {record_id} was not delivered by receipt "
                           f"{receipt.id} (or was erased since); feedback may name only its delivered records "
                           f"(GET /receipts/{receipt.id} lists them)", path=at("recordIds", index))
    return request.record_ids


def _replayed(existing: Feedback, request: FeedbackRequest, record_ids: tuple[str, ...]) -> dict:
    same = (existing.outcome == request.outcome and existing.score == request.score
            and sorted(existing.record_ids) == sorted(record_ids) and existing.comment == request.comment)
    if not same:
        raise ApiError("dedupe_conflict", f"dedupeKey {request.dedupe_key!r} already recorded different feedback "
                       f"({existing.id}) on this receipt; send a new dedupeKey for new feedback",
                       path="dedupeKey", extra={"feedbackId": str(existing.id)})
    return feedback_payload(existing, deduplicated=True)


def feedback_payload(feedback: Feedback, *, deduplicated: bool) -> dict:
    return {"id": str(feedback.id), "receiptId": str(feedback.receipt_id), "outcome": feedback.outcome,
            "score": feedback.score, "recordIds": list(feedback.record_ids), "comment": feedback.comment,
            "dedupeKey": feedback.dedupe_key, "createdAt": feedback.created_at.isoformat(),
            "deduplicated": deduplicated}


_UPSERT = """
INSERT INTO retrieval_app_recordutility AS u (record_id, workspace_id, n, total, updated_at)
SELECT id, %s, 1, %s, now() FROM unnest(%s::uuid[]) AS ids(id) ORDER BY id
ON CONFLICT (record_id) DO UPDATE SET n = u.n + 1, total = u.total + EXCLUDED.total, updated_at = EXCLUDED.updated_at
"""


def _add_outcome(workspace_id: int, record_ids, score: float) -> None:
    if not record_ids:
        return
    with connection.cursor() as cursor:
        cursor.execute(_UPSERT, [workspace_id, score, sorted(record_ids)])


def utility(n: int, total: float) -> float:
    """Posterior mean of a record's scores under the Beta(1, 1) prior (see the module docstring)."""
    return (total + PRIOR_WEIGHT * PRIOR_MEAN) / (n + PRIOR_WEIGHT)


def record_utilities(*, workspace, record_ids) -> dict[uuid.UUID, float]:
    """``{record id: utility}`` for the given records that have feedback in ``workspace``."""
    if not record_ids:
        return {}
    rows = RecordUtility.objects.filter(workspace=workspace, record_id__in=list(record_ids)) \
        .values_list("record_id", "n", "total")
    return {record_id: utility(n, total) for record_id, n, total in rows}


@transaction.atomic
def record_utility_rebuild(*, workspace) -> int:
    """Recompute ``RecordUtility`` of ``workspace`` from its feedback rows; returns the row count."""
    RecordUtility.objects.filter(workspace=workspace).delete()
    with connection.cursor() as cursor:
        cursor.execute("""
            INSERT INTO retrieval_app_recordutility (record_id, workspace_id, n, total, updated_at)
            SELECT ids.id::uuid, f.workspace_id, count(*), sum(f.score), now()
            FROM retrieval_app_feedback f CROSS JOIN LATERAL jsonb_array_elements_text(f.record_ids) AS ids(id)
            WHERE f.workspace_id = %s GROUP BY ids.id, f.workspace_id""", [workspace.pk])
        return cursor.rowcount
