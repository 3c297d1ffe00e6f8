"""The lexical term index's tables (design in ``catalog_app.lexical``'s docstring).

The tables are created by migration ``0009_lexical_index`` with DDL Django cannot express (a
primary key with ``INCLUDE`` columns, ``COLLATE "C"`` terms, a workspace-deletion trigger), so
the models are unmanaged: they name the tables and serve ORM reads; every write goes through
``catalog_app.lexical.maintenance``.
"""
from django.db import models


class LexicalGroup(models.Model):
    """One combination of the denormalised scope columns within a workspace; postings, documents
    and statistics carry its id instead of the columns themselves."""

    workspace_id = models.IntegerField()
    collection = models.CharField(max_length=64)
    collection_version = models.IntegerField()
    type = models.CharField(max_length=64)
    status = models.CharField(max_length=8)
    keyed = models.BooleanField()

    class Meta:
        managed = False
        db_table = "catalog_app_lexical_group"


class LexicalGroupStats(models.Model):
    """Per (group, analyzer): the visible records and the sum of their lengths."""

    pk = models.CompositePrimaryKey("group_id", "analyzer")
    group_id = models.IntegerField()
    analyzer = models.SmallIntegerField()
    docs = models.BigIntegerField()
    total_length = models.BigIntegerField()

    class Meta:
        managed = False
        db_table = "catalog_app_lexical_group_stats"


class LexicalTermStats(models.Model):
    """Per (workspace, analyzer, term, collection, status): the exact document frequency and
    pruning bound material (``max_tf`` never decreases and ``min_length`` never increases on
    removal, so they stay valid bounds for every scope inside that collection and status)."""

    pk = models.CompositePrimaryKey("workspace_id", "analyzer", "term", "collection", "status")
    workspace_id = models.IntegerField()
    analyzer = models.SmallIntegerField()
    term = models.TextField()
    collection = models.CharField(max_length=64)
    status = models.CharField(max_length=8)
    df = models.IntegerField()
    max_tf = models.IntegerField()
    min_length = models.IntegerField()

    class Meta:
        managed = False
        db_table = "catalog_app_lexical_term_stats"


class LexicalDocument(models.Model):
    """One visible record under one analyzer: its group and length (records with no term too,
    since they count in N and the average length)."""

    pk = models.CompositePrimaryKey("seq", "analyzer")
    seq = models.BigIntegerField()
    analyzer = models.SmallIntegerField()
    workspace_id = models.IntegerField()
    record_id = models.UUIDField()
    group_id = models.IntegerField()
    length = models.IntegerField()

    class Meta:
        managed = False
        db_table = "catalog_app_lexical_document"


class LexicalPosting(models.Model):
    """One term of one visible record: its frequency, the record's group and length."""

    pk = models.CompositePrimaryKey("workspace_id", "analyzer", "term", "seq")
    workspace_id = models.IntegerField()
    analyzer = models.SmallIntegerField()
    term = models.TextField()
    seq = models.BigIntegerField()
    group_id = models.IntegerField()
    tf = models.IntegerField()
    length = models.IntegerField()

    class Meta:
        managed = False
        db_table = "catalog_app_lexical_posting"


class LexicalSourceTotals(models.Model):
    """Per (workspace, collection): every record row ever inserted, visible or not, and the sum
    of their ``record_sql.source_bytes``."""

    pk = models.CompositePrimaryKey("workspace_id", "collection")
    workspace_id = models.IntegerField()
    collection = models.CharField(max_length=64)
    rows = models.BigIntegerField()
    bytes = models.BigIntegerField()

    class Meta:
        managed = False
        db_table = "catalog_app_lexical_source_totals"


class LexicalBackfill(models.Model):
    """Progress of ``lexical_backfill`` for a workspace: every record with ``seq <= last_seq``
    has been reconciled; ``finished`` once the source totals were recounted."""

    workspace_id = models.IntegerField(primary_key=True)
    last_seq = models.BigIntegerField()
    finished = models.BooleanField()

    class Meta:
        managed = False
        db_table = "catalog_app_lexical_backfill"


class LexicalBlock(models.Model):
    """A run of one (term, group)'s postings with ``first_seq <= seq <= last_seq``, compacted
    into one value (format in ``catalog_app.lexical.blocks``)."""

    pk = models.CompositePrimaryKey("workspace_id", "analyzer", "term", "group_id", "first_seq")
    workspace_id = models.IntegerField()
    analyzer = models.SmallIntegerField()
    term = models.TextField()
    group_id = models.IntegerField()
    first_seq = models.BigIntegerField()
    last_seq = models.BigIntegerField()
    postings = models.IntegerField()
    width = models.SmallIntegerField()
    data = models.BinaryField()
    digest = models.BinaryField(editable=False)  # sha256(data), generated by PostgreSQL (migration 0017)

    class Meta:
        managed = False
        db_table = "catalog_app_lexical_block"


class LexicalCompaction(models.Model):
    """Per (workspace, analyzer): the blocks hold every posting with ``seq <= watermark`` as of
    the last compaction, except the seqs the change log names since."""

    pk = models.CompositePrimaryKey("workspace_id", "analyzer")
    workspace_id = models.IntegerField()
    analyzer = models.SmallIntegerField()
    watermark = models.BigIntegerField()
    compacted_at = models.DateTimeField()

    class Meta:
        managed = False
        db_table = "catalog_app_lexical_compaction"


class LexicalChange(models.Model):
    """A record seq whose postings under an analyzer changed (added or removed), appended by the
    write path and forgotten by the compaction that folds the change into the blocks."""

    id = models.BigAutoField(primary_key=True)
    workspace_id = models.IntegerField()
    analyzer = models.SmallIntegerField()
    seq = models.BigIntegerField()

    class Meta:
        managed = False
        db_table = "catalog_app_lexical_change"
