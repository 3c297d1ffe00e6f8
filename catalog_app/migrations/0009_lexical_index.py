"""The lexical term index (``catalog_app.lexical``): its tables, written as DDL because Django
cannot express them (the posting key's ``INCLUDE`` columns make term scans index-only; terms
compare bytewise under ``COLLATE "C"``; the statistics tables, updated by every write, leave half
of each page free so those updates stay heap-only). No foreign keys: a per-row RI check on every posting
would cost the write path more than the index itself; a trigger forgets a deleted workspace's
rows instead (Django deletes records first, then the workspace row).
"""

from django.db import migrations, models


CREATE = """
CREATE TABLE catalog_app_lexical_group (
    id serial PRIMARY KEY,
    workspace_id integer NOT NULL,
    collection varchar(64) NOT NULL,
    collection_version integer NOT NULL,
    type varchar(64) NOT NULL,
    status varchar(8) NOT NULL,
    keyed boolean NOT NULL,
    CONSTRAINT lexical_group_identity UNIQUE (workspace_id, collection, collection_version, type, status, keyed)
);
CREATE TABLE catalog_app_lexical_group_stats (
    group_id integer NOT NULL,
    analyzer smallint NOT NULL,
    docs bigint NOT NULL,
    total_length bigint NOT NULL,
    PRIMARY KEY (group_id, analyzer)
) WITH (fillfactor = 50);
CREATE TABLE catalog_app_lexical_term_stats (
    workspace_id integer NOT NULL,
    analyzer smallint NOT NULL,
    term text COLLATE "C" NOT NULL,
    group_id integer NOT NULL,
    df integer NOT NULL,
    max_tf integer NOT NULL,
    min_length integer NOT NULL,
    PRIMARY KEY (workspace_id, analyzer, term, group_id)
) WITH (fillfactor = 50);
CREATE TABLE catalog_app_lexical_document (
    seq bigint NOT NULL,
    analyzer smallint NOT NULL,
    workspace_id integer NOT NULL,
    record_id uuid NOT NULL,
    group_id integer NOT NULL,
    length integer NOT NULL,
    PRIMARY KEY (seq, analyzer)
);
CREATE INDEX lexical_document_workspace ON catalog_app_lexical_document (workspace_id, analyzer, seq);
CREATE TABLE catalog_app_lexical_posting (
    workspace_id integer NOT NULL,
    analyzer smallint NOT NULL,
    term text COLLATE "C" NOT NULL,
    seq bigint NOT NULL,
    group_id integer NOT NULL,
    tf integer NOT NULL,
    length integer NOT NULL,
    PRIMARY KEY (workspace_id, analyzer, term, seq) INCLUDE (group_id, tf, length)
);
CREATE TABLE catalog_app_lexical_source_totals (
    workspace_id integer NOT NULL,
    collection varchar(64) NOT NULL,
    rows bigint NOT NULL,
    bytes bigint NOT NULL,
    PRIMARY KEY (workspace_id, collection)
) WITH (fillfactor = 50);
CREATE TABLE catalog_app_lexical_backfill (
    workspace_id integer PRIMARY KEY,
    last_seq bigint NOT NULL,
    finished boolean NOT NULL
);
CREATE FUNCTION lexical_forget_workspace() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM catalog_app_lexical_posting WHERE workspace_id = OLD.id;
    DELETE FROM catalog_app_lexical_term_stats WHERE workspace_id = OLD.id;
    DELETE FROM catalog_app_lexical_document WHERE workspace_id = OLD.id;
    DELETE FROM catalog_app_lexical_group_stats WHERE group_id IN (
        SELECT id FROM catalog_app_lexical_group WHERE workspace_id = OLD.id);
    DELETE FROM catalog_app_lexical_group WHERE workspace_id = OLD.id;
    DELETE FROM catalog_app_lexical_source_totals WHERE workspace_id = OLD.id;
    DELETE FROM catalog_app_lexical_backfill WHERE workspace_id = OLD.id;
    RETURN OLD;
END;
$$;
CREATE TRIGGER lexical_forget_workspace AFTER DELETE ON catalog_app_workspace
    FOR EACH ROW EXECUTE FUNCTION lexical_forget_workspace();
"""

DROP = """
DROP TRIGGER lexical_forget_workspace ON catalog_app_workspace;
DROP FUNCTION lexical_forget_workspace();
DROP TABLE catalog_app_lexical_group, catalog_app_lexical_group_stats, catalog_app_lexical_term_stats,
    catalog_app_lexical_document, catalog_app_lexical_posting, catalog_app_lexical_source_totals,
    catalog_app_lexical_backfill;
"""


class Migration(migrations.Migration):

    dependencies = [
        ('catalog_app', '0008_drop_unused_write_indexes'),
    ]

    operations = [
        migrations.CreateModel(
            name='LexicalBackfill',
            fields=[
                ('workspace_id', models.IntegerField(primary_key=True, serialize=False)),
                ('last_seq', models.BigIntegerField()),
                ('finished', models.BooleanField()),
            ],
            options={
                'db_table': 'catalog_app_lexical_backfill',
                'managed': False,
            },
        ),
        migrations.CreateModel(
            name='LexicalDocument',
            fields=[
                ('pk', models.CompositePrimaryKey('seq', 'analyzer', blank=True, editable=False, primary_key=True, serialize=False)),
                ('seq', models.BigIntegerField()),
                ('analyzer', models.SmallIntegerField()),
                ('workspace_id', models.IntegerField()),
                ('record_id', models.UUIDField()),
                ('group_id', models.IntegerField()),
                ('length', models.IntegerField()),
            ],
            options={
                'db_table': 'catalog_app_lexical_document',
                'managed': False,
            },
        ),
        migrations.CreateModel(
            name='LexicalGroup',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('workspace_id', models.IntegerField()),
                ('collection', models.CharField(max_length=64)),
                ('collection_version', models.IntegerField()),
                ('type', models.CharField(max_length=64)),
                ('status', models.CharField(max_length=8)),
                ('keyed', models.BooleanField()),
            ],
            options={
                'db_table': 'catalog_app_lexical_group',
                'managed': False,
            },
        ),
        migrations.CreateModel(
            name='LexicalGroupStats',
            fields=[
                ('pk', models.CompositePrimaryKey('group_id', 'analyzer', blank=True, editable=False, primary_key=True, serialize=False)),
                ('group_id', models.IntegerField()),
                ('analyzer', models.SmallIntegerField()),
                ('docs', models.BigIntegerField()),
                ('total_length', models.BigIntegerField()),
            ],
            options={
                'db_table': 'catalog_app_lexical_group_stats',
                'managed': False,
            },
        ),
        migrations.CreateModel(
            name='LexicalPosting',
            fields=[
                ('pk', models.CompositePrimaryKey('workspace_id', 'analyzer', 'term', 'seq', blank=True, editable=False, primary_key=True, serialize=False)),
                ('workspace_id', models.IntegerField()),
                ('analyzer', models.SmallIntegerField()),
                ('term', models.TextField()),
                ('seq', models.BigIntegerField()),
                ('group_id', models.IntegerField()),
                ('tf', models.IntegerField()),
                ('length', models.IntegerField()),
            ],
            options={
                'db_table': 'catalog_app_lexical_posting',
                'managed': False,
            },
        ),
        migrations.CreateModel(
            name='LexicalSourceTotals',
            fields=[
                ('pk', models.CompositePrimaryKey('workspace_id', 'collection', blank=True, editable=False, primary_key=True, serialize=False)),
                ('workspace_id', models.IntegerField()),
                ('collection', models.CharField(max_length=64)),
                ('rows', models.BigIntegerField()),
                ('bytes', models.BigIntegerField()),
            ],
            options={
                'db_table': 'catalog_app_lexical_source_totals',
                'managed': False,
            },
        ),
        migrations.CreateModel(
            name='LexicalTermStats',
            fields=[
                ('pk', models.CompositePrimaryKey('workspace_id', 'analyzer', 'term', 'group_id', blank=True, editable=False, primary_key=True, serialize=False)),
                ('workspace_id', models.IntegerField()),
                ('analyzer', models.SmallIntegerField()),
                ('term', models.TextField()),
                ('group_id', models.IntegerField()),
                ('df', models.IntegerField()),
                ('max_tf', models.IntegerField()),
                ('min_length', models.IntegerField()),
            ],
            options={
                'db_table': 'catalog_app_lexical_term_stats',
                'managed': False,
            },
        ),
        migrations.RunSQL(CREATE, DROP),
    ]
