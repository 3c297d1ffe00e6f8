"""The system of record.

Invariants: record content is never updated (corrections are newer records in the same
(entity, collection, key, status) lane); only enrichment columns (scores, annotations,
annotation_meta, enrichment_error, enriched_at), ``last_accessed`` and ``access_count`` change
after insert.
Catalog definitions are immutable per (family, name, version); only ``active`` flips.
"""
import uuid

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import BrinIndex, GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import Q
from pgvector.django import VectorField

WORKSPACE_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
RECORD_SEQUENCE = "catalog_app_record_seq"
# What a key may do (catalog_app.auth): read anything, write records and feedback, review drafts.
CAPABILITIES = ("read", "write", "review")


def all_capabilities() -> list[str]:
    return list(CAPABILITIES)


class Workspace(models.Model):
    name = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Bumped by every catalog load or activation; the compiled catalog is cached by it.
    catalog_revision = models.PositiveIntegerField(default=0)
    # Workspace setting overrides by dotted name ("retrieval.tokenBudget": 2000); the owning
    # app resolves effective values and their defaults (retrieval_app.settings).
    settings = models.JSONField(default=dict, blank=True)

    def __str__(self):
        return self.name


class ApiKey(models.Model):
    """A bearer key. Only the lowercase SHA-256 hex of the key is stored."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="api_keys")
    key_hash = models.CharField(max_length=64, unique=True)
    label = models.CharField(max_length=128, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    capabilities = ArrayField(models.CharField(max_length=16, choices=[(c, c) for c in CAPABILITIES]),
                              default=all_capabilities)

    class Meta:
        constraints = [models.CheckConstraint(condition=Q(capabilities__contained_by=list(CAPABILITIES)),
                                              name="api_key_known_capabilities")]

    def __str__(self):
        return f"{self.workspace.name} key {self.key_hash[:8]}…"


class Definition(models.Model):
    """One catalog definition, stored with the SHA-256 of its canonical JSON.

    Versioned families (collections, views) take their version from YAML and are immutable;
    unversioned families (processors, models, rank defaults, profiles) get a new revision each
    time their body changes, and the newest revision is the active one.
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="definitions")
    family = models.CharField(max_length=32)
    name = models.CharField(max_length=64)
    version = models.PositiveIntegerField()
    active = models.BooleanField(default=False)
    body = models.JSONField()
    hash = models.CharField(max_length=64)
    contract_hash = models.CharField(max_length=64, blank=True, default="")
    source_file = models.CharField(max_length=512, blank=True, default="")
    source_text = models.TextField(blank=True, default="")
    loaded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workspace", "family", "name", "version"],
                                    name="definition_identity"),
            models.UniqueConstraint(fields=["workspace", "family", "name"], condition=Q(active=True),
                                    name="definition_one_active"),
        ]
        ordering = ["family", "name", "version"]

    def __str__(self):
        return f"{self.family} {self.name}@{self.version}"


class Record(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # Workspace-global ingestion order, assigned by the database from a sequence (migration 0001).
    seq = models.BigIntegerField(unique=True, editable=False,
                                 db_default=models.Func(models.Value(RECORD_SEQUENCE), function="nextval"))
    # The workspace's own ingestion ordinal (1, 2, 3, ... per workspace), the ``seq`` every API
    # response shows: the global ``seq`` would reveal how much other workspaces write. A trigger
    # assigns both under a per-workspace counter lock (migration 0010), so within a workspace the
    # two orders agree and ``seq`` stays the internal sort key.
    workspace_seq = models.BigIntegerField(editable=False, db_default=0)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, db_index=False)
    collection = models.CharField(max_length=64)
    collection_version = models.PositiveIntegerField()
    collection_hash = models.CharField(max_length=64)
    entity = models.CharField(max_length=255)
    type = models.CharField(max_length=64)
    key = models.CharField(max_length=128, null=True, blank=True)
    status = models.CharField(max_length=8, default="active")
    text = models.TextField()
    content = models.JSONField()
    scores = models.JSONField(default=dict)
    annotations = models.JSONField(default=dict)
    annotation_meta = models.JSONField(default=dict)
    enrichment_error = models.JSONField(null=True, blank=True)
    depth = models.SmallIntegerField(default=0)
    derived_from = ArrayField(models.UUIDField(), default=list, blank=True)
    run_id = models.UUIDField(null=True, blank=True)
    dedupe_key = models.CharField(max_length=256, null=True, blank=True)
    # SHA-256 of the canonical write payload; an identical retry under the same dedupe_key is
    # a duplicate, a different payload is a conflict.
    dedupe_hash = models.CharField(max_length=64, blank=True, default="")
    occurred_at = models.DateTimeField()
    created_at = models.DateTimeField()
    last_accessed = models.DateTimeField()
    # Touches on read (catalog_app.services.record_touch), beside last_accessed.
    access_count = models.PositiveIntegerField(default=0, db_default=0)
    # Readiness: ready once every required processor has written.
    enriched_at = models.DateTimeField(null=True, blank=True)
    tombstone = models.BooleanField(default=False)
    # Exact BM25 (lexical-search.md): term frequencies and token count of the text. Read per
    # row by the BM25 statements, never looked up by term, so not indexed.
    bm25_tf = models.JSONField(default=dict)
    bm25_length = models.PositiveIntegerField(default=0)
    # Stemmed English BM25 (``en_v1``, catalog_app.en_terms): the same, over stemmed terms. NULL
    # on records written before the analyzer existed; the index's reconcile fills them in.
    en_tf = models.JSONField(null=True, default=None)
    en_length = models.PositiveIntegerField(null=True, default=None)
    search_vector = models.GeneratedField(
        expression=SearchVector("text", config="english"),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    class Meta:
        indexes = [
            models.Index(fields=["workspace", "entity", "-seq"], name="record_entity_seq"),
            models.Index(fields=["workspace", "collection", "entity", "-seq"], name="record_collection_seq"),
            # Conversation order (``occurred_at``, then ``seq``) inside one collection and entity:
            # the memory lookups' ``around``/``latest`` and the brief's neighbours probe it
            # instead of sorting all of an entity's records.
            models.Index(fields=["workspace", "collection", "entity", "-occurred_at", "-seq"],
                         name="record_conversation"),
            models.Index(fields=["workspace", "entity", "collection", "key", "status", "-seq"],
                         condition=Q(key__isnull=False), name="record_keyed_lane"),
            models.Index(fields=["workspace", "type", "-seq"], name="record_type_seq"),
            # Newest first; the trailing collection lets a scan for one collection's newest rows
            # skip the other collections' newer ones in the index, without reading their rows.
            models.Index(fields=["workspace", "-occurred_at", "-seq", "collection"], name="record_recent"),
            models.Index(fields=["seq"], condition=Q(enriched_at__isnull=True), name="record_pending"),
            # The Operations page's last hour of writes (ingest-to-ready lag, records over time):
            # rows arrive in created_at order, so a block range index is small and cheap to keep.
            BrinIndex(fields=["created_at"], name="record_created_brin"),
            GinIndex(fields=["derived_from"], name="record_derived_from"),
            GinIndex(fields=["search_vector"], name="record_search_vector"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "dedupe_key"], condition=Q(dedupe_key__isnull=False),
                                    name="record_dedupe_key"),
            models.UniqueConstraint(fields=["workspace", "workspace_seq"], name="record_workspace_seq"),
            models.CheckConstraint(condition=Q(status__in=["active", "draft"]), name="record_status"),
            models.CheckConstraint(condition=Q(depth__gte=0) & Q(depth__lte=16), name="record_depth"),
        ]

    @property
    def ready(self) -> bool:
        return self.enriched_at is not None

    def __str__(self):
        return f"{self.collection}/{self.type} {self.entity} {self.id}"


class WorkspaceRecordCounter(models.Model):
    """The last ``Record.workspace_seq`` handed out in a workspace, which is also how many
    records it holds (records are never deleted), and the bytes of their text and content
    (migration 0022). Only the record insert trigger writes it; its row lock orders a
    workspace's concurrent writers."""

    workspace = models.OneToOneField(Workspace, on_delete=models.CASCADE, primary_key=True)
    last_seq = models.BigIntegerField(default=0)
    stored_bytes = models.BigIntegerField(default=0, db_default=0)


class RecordEmbedding(models.Model):
    """One record's vector in one embedding space. Each space has a fixed dimension and its
    own partial HNSW (cosine) index over ``embedding::vector(dim)``."""

    # No index of its own: the unique (record, space) constraint leads with record.
    record = models.ForeignKey(Record, on_delete=models.CASCADE, related_name="embeddings", db_index=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, db_index=False)
    space = models.CharField(max_length=64)
    embedding = VectorField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["record", "space"], name="record_embedding_identity"),
        ]


class EmbeddingSwitch(models.Model):
    """Which runtime of the bundled model a workspace's vectors are served from, and the switch
    to another one while a re-embedding job fills its space (``catalog_app.embedding_serving``).
    No row: the workspace is served from the space of each process's ``EMBEDDING_RUNTIME``.
    ``serving_runtime`` changes only in the job's swap transaction, once every live record with a
    serving vector has a target vector too."""

    workspace = models.OneToOneField(Workspace, on_delete=models.CASCADE, primary_key=True)
    serving_runtime = models.CharField(max_length=16, null=True)
    target_runtime = models.CharField(max_length=16, null=True)
    # The job's progress, for /health and the console: records still missing when the job last
    # started or resumed, plus those written before; ``records_done`` grows in each batch's
    # transaction, so it never counts a rolled-back batch.
    records_total = models.BigIntegerField(default=0)
    records_done = models.BigIntegerField(default=0)
    started_at = models.DateTimeField(null=True)
    swapped_at = models.DateTimeField(null=True)


class ActivationAudit(models.Model):
    """One activation of a definition version: who switched ``name`` of ``family`` from
    ``from_version`` (None when nothing was active) to ``to_version``, and when. Written by
    ``DefinitionActivation.execute`` in the same transaction as the flip; never changed."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="activation_audits")
    family = models.CharField(max_length=32)
    name = models.CharField(max_length=64)
    from_version = models.PositiveIntegerField(null=True, blank=True)
    to_version = models.PositiveIntegerField()
    # A username for the admin, "cli" for management commands, "api:<workspace>" for routes.
    actor = models.CharField(max_length=150)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["workspace", "family", "name", "-created_at"], name="activation_audit_name")]
        ordering = ["-created_at", "-id"]

    def __str__(self):
        origin = f"@{self.from_version}" if self.from_version is not None else "(none)"
        return f"{self.family} {self.name} {origin} → @{self.to_version} by {self.actor}"


class ReviewAudit(models.Model):
    """One review decision on a draft: ``approve`` wrote ``record`` as the draft's active
    successor, ``reject`` wrote ``record`` as the draft-lane tombstone withdrawing it. Holds
    record references only (no copied content), so erasing the records erases the audit too."""

    ACTIONS = (("approve", "approve"), ("reject", "reject"))

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="review_audits")
    action = models.CharField(max_length=8, choices=ACTIONS)
    draft = models.ForeignKey(Record, on_delete=models.CASCADE, related_name="+")
    record = models.ForeignKey(Record, on_delete=models.CASCADE, related_name="+")
    actor = models.CharField(max_length=150)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"{self.action} {self.draft_id} by {self.actor}"


class ErasureAudit(models.Model):
    """One erasure (``catalog_app.services.record_erase``): who (the API key's id; None from
    code), when, what kind (one ``record`` or one ``entity``), and how many rows of what it
    removed. It names neither the entity nor the records: an audit that kept them would keep
    what was erased."""

    KINDS = (("record", "record"), ("entity", "entity"))

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="erasure_audits")
    actor_key_id = models.BigIntegerField(null=True, blank=True)
    kind = models.CharField(max_length=8, choices=KINDS)
    collection = models.CharField(max_length=64, blank=True, default="")
    counts = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"erased {self.counts.get('records', 0)} records ({self.kind}) by key {self.actor_key_id}"


class DeadLetter(models.Model):
    """A task that failed for good: its last try raised an error that is not retried, or its
    retries ran out (``catalog_app.tasks.DeadLetteringTask``). Its message was acknowledged, so
    it no longer blocks its queue; an operator reads it in the admin (docs/queues.md). Holds ids
    and arguments, never record text."""

    task_name = models.CharField(max_length=200)
    task_id = models.CharField(max_length=64)
    queue = models.CharField(max_length=64, blank=True)
    args = models.JSONField(default=list)
    kwargs = models.JSONField(default=dict)
    error = models.TextField()
    # None when the worker's main process recorded it after a hard time limit (it does not
    # know how many retries came before).
    tries = models.PositiveIntegerField(null=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"{self.task_name}[{self.task_id}] after {self.tries} tries"


class TaskReceipt(models.Model):
    """The id of a task whose effect is not repeatable (a touch adds to ``access_count``),
    written in the transaction of that effect, so a second delivery of the same message finds
    it and changes nothing. Rows older than ``TASK_RECEIPT_TTL_S`` are pruned by the workers'
    recovery task."""

    task_id = models.CharField(max_length=64, primary_key=True)
    finished_at = models.DateTimeField(auto_now_add=True, db_index=True)


# The lexical index's tables live with their package; importing them here registers them.
from .lexical.models import (  # noqa: E402,F401
    LexicalBackfill, LexicalBlock, LexicalChange, LexicalCompaction, LexicalDocument, LexicalGroup,
    LexicalGroupStats, LexicalPending, LexicalSourceTotals,
)
from .operations.models import RequestMinute  # noqa: E402,F401
