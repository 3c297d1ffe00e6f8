"""Receipts: what one ``POST /retrieve`` call delivered, exactly.

A receipt is written once, in the call that delivered the context, and never changed. It names
every delivered record with the version it was delivered at (``seq``, collection version), the
section it appeared in and the tokens it cost, plus the SHA-256 of the canonical parsed request,
so a later reader (feedback, evaluation) can tell what the caller saw without re-running the
retrieval. It holds record ids only (no copied content), and belongs to one workspace: another
workspace's receipt id looks exactly like a missing one.

Feedback (``POST /receipts/{id}/feedback``, ``retrieval_app.feedback``) is an outcome recorded
against a receipt and some of its delivered records. ``Feedback`` rows are the source of truth;
``RecordUtility`` is their per-record aggregate (count and sum of scores), maintained in the
same transaction as each feedback row, so value-aware selection reads one indexed row per
candidate instead of aggregating feedback at query time.
"""
import uuid

from django.db import models
from django.db.models import Q

from catalog_app.models import Record, Workspace


class Receipt(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="receipts")
    request_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    # {"policies": [id, ...], "facts": [...], "events": [...], "derived": [...]}, in delivered order.
    sections = models.JSONField()
    # [{"id", "seq", "collection", "collectionVersion", "section", "tokens"}], in delivered order.
    items = models.JSONField()
    total_tokens = models.PositiveIntegerField()
    token_budget = models.PositiveIntegerField(null=True, blank=True)  # null: raw (no budget applied)
    mode = models.CharField(max_length=16)
    raw = models.BooleanField(default=False)

    class Meta:
        indexes = [models.Index(fields=["workspace", "-created_at"], name="receipt_workspace_recent")]

    def __str__(self):
        return f"receipt {self.id} ({self.total_tokens} tokens)"


class Feedback(models.Model):
    """One outcome reported for a receipt; immutable once written."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="receipt_feedback")
    receipt = models.ForeignKey(Receipt, on_delete=models.CASCADE, related_name="feedback")
    outcome = models.CharField(max_length=16)  # success | failure | partial | irrelevant
    score = models.FloatField()  # in [0, 1]; defaults by outcome
    record_ids = models.JSONField()  # [id, ...] of delivered records the outcome is about, as sent
    comment = models.TextField(blank=True, default="")
    dedupe_key = models.CharField(max_length=200, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["receipt", "dedupe_key"], condition=Q(dedupe_key__isnull=False),
                                               name="feedback_receipt_dedupe_key")]
        indexes = [models.Index(fields=["workspace", "-created_at"], name="feedback_workspace_recent")]

    def __str__(self):
        return f"feedback {self.id}: {self.outcome} ({self.score})"


class RecordUtility(models.Model):
    """Feedback aggregated per record: ``n`` outcomes whose scores sum to ``total``."""

    record = models.OneToOneField(Record, primary_key=True, on_delete=models.CASCADE, related_name="utility")
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="record_utilities")
    n = models.PositiveIntegerField()
    total = models.FloatField()
    updated_at = models.DateTimeField()

    def __str__(self):
        return f"utility of {self.record_id}: {self.total}/{self.n}"


class MemoryModelCalls(models.Model):
    """How many model calls ``POST /memory/search`` made for one workspace on one UTC day.

    The row is claimed with one ``INSERT ... ON CONFLICT DO UPDATE ... WHERE calls < limit``
    (``retrieval_app.memory.brief_budget``), so concurrent searches never spend past the
    workspace's daily budget."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memory_model_calls")
    day = models.DateField()
    calls = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "day"], name="memory_model_calls_day")]
