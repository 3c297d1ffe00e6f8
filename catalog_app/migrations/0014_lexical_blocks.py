"""Compacted posting blocks for the lexical index (``catalog_app.lexical.blocks``): the block
table, each (workspace, analyzer)'s compaction watermark, and the change log the write path
appends to. Written as DDL, like 0009: the block data is stored uncompressed out of line
(``STORAGE EXTERNAL``), so reading a term's blocks copies bytes without decompressing them.
The workspace-deletion trigger forgets these rows too.
"""

from django.db import migrations, models

FORGET = """
CREATE OR REPLACE FUNCTION lexical_forget_workspace() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM catalog_app_lexical_posting WHERE workspace_id = OLD.id;
    DELETE FROM catalog_app_lexical_term_stats WHERE workspace_id = OLD.id;
    DELETE FROM catalog_app_lexical_document WHERE workspace_id = OLD.id;
    DELETE FROM catalog_app_lexical_group_stats WHERE group_id IN (
        SELECT id FROM catalog_app_lexical_group WHERE workspace_id = OLD.id);
    DELETE FROM catalog_app_lexical_group WHERE workspace_id = OLD.id;
    DELETE FROM catalog_app_lexical_source_totals WHERE workspace_id = OLD.id;
    DELETE FROM catalog_app_lexical_backfill WHERE workspace_id = OLD.id;
    {extra}
    RETURN OLD;
END;
$$;
"""

CREATE = """
CREATE TABLE catalog_app_lexical_block (
    workspace_id integer NOT NULL,
    analyzer smallint NOT NULL,
    term text COLLATE "C" NOT NULL,
    group_id integer NOT NULL,
    first_seq bigint NOT NULL,
    last_seq bigint NOT NULL,
    postings integer NOT NULL,
    width smallint NOT NULL,
    data bytea NOT NULL,
    PRIMARY KEY (workspace_id, analyzer, term, group_id, first_seq)
);
ALTER TABLE catalog_app_lexical_block ALTER COLUMN data SET STORAGE EXTERNAL;
CREATE TABLE catalog_app_lexical_compaction (
    workspace_id integer NOT NULL,
    analyzer smallint NOT NULL,
    watermark bigint NOT NULL,
    compacted_at timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, analyzer)
);
CREATE TABLE catalog_app_lexical_change (
    id bigserial PRIMARY KEY,
    workspace_id integer NOT NULL,
    analyzer smallint NOT NULL,
    seq bigint NOT NULL
);
CREATE INDEX lexical_change_seq ON catalog_app_lexical_change (workspace_id, analyzer, seq);
""" + FORGET.replace("{extra}", """DELETE FROM catalog_app_lexical_block WHERE workspace_id = OLD.id;
    DELETE FROM catalog_app_lexical_compaction WHERE workspace_id = OLD.id;
    DELETE FROM catalog_app_lexical_change WHERE workspace_id = OLD.id;""")

DROP = FORGET.replace("{extra}", "") + """
DROP TABLE catalog_app_lexical_block, catalog_app_lexical_compaction, catalog_app_lexical_change;
"""


class Migration(migrations.Migration):

    dependencies = [
        ('catalog_app', '0013_record_conversation_order'),
    ]

    operations = [
        migrations.RunSQL(CREATE, DROP),
        migrations.CreateModel(
            name='LexicalBlock',
            fields=[
                ('pk', models.CompositePrimaryKey('workspace_id', 'analyzer', 'term', 'group_id', 'first_seq', blank=True, editable=False, primary_key=True, serialize=False)),
                ('workspace_id', models.IntegerField()),
                ('analyzer', models.SmallIntegerField()),
                ('term', models.TextField()),
                ('group_id', models.IntegerField()),
                ('first_seq', models.BigIntegerField()),
                ('last_seq', models.BigIntegerField()),
                ('postings', models.IntegerField()),
                ('width', models.SmallIntegerField()),
                ('data', models.BinaryField()),
            ],
            options={'db_table': 'catalog_app_lexical_block', 'managed': False},
        ),
        migrations.CreateModel(
            name='LexicalCompaction',
            fields=[
                ('pk', models.CompositePrimaryKey('workspace_id', 'analyzer', blank=True, editable=False, primary_key=True, serialize=False)),
                ('workspace_id', models.IntegerField()),
                ('analyzer', models.SmallIntegerField()),
                ('watermark', models.BigIntegerField()),
                ('compacted_at', models.DateTimeField()),
            ],
            options={'db_table': 'catalog_app_lexical_compaction', 'managed': False},
        ),
        migrations.CreateModel(
            name='LexicalChange',
            fields=[
                ('id', models.BigAutoField(primary_key=True, serialize=False)),
                ('workspace_id', models.IntegerField()),
                ('analyzer', models.SmallIntegerField()),
                ('seq', models.BigIntegerField()),
            ],
            options={'db_table': 'catalog_app_lexical_change', 'managed': False},
        ),
    ]
