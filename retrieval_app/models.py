"""Receipts: what one ``POST /retrieve`` call delivered, exactly.

A receipt is written once, in the call that delivered the context, and never changed. It names
every delivered record with the version it was delivered at (``seq``, collection version), the
section it appeared in and the tokens it cost, plus the SHA-256 of the canonical parsed request,
so a later reader (feedback, evaluation) can tell what the caller saw without re-running the
retrieval. It holds record ids only (no copied content), and belongs to one workspace: another
workspace's receipt id looks exactly like a missing one.
"""
import uuid

from django.db import models

from catalog_app.models import Workspace


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
