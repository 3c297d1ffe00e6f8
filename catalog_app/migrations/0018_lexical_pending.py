"""Postings of the changes since a compaction, stored per write instead of per posting
(``catalog_app.lexical.maintenance``): one row per (workspace, analyzer, term, group, change)
holding the postings a write added for that term and group, packed. Posting rows and the term
statistics are gone: a posting row cost the write path one B-tree entry per (term, record), about
as much as inserting the record itself. The rows above each watermark or logged move into
pending rows, so every query reads what it read before.
"""

from django.db import migrations, models

FORGET = """
CREATE OR REPLACE FUNCTION lexical_forget_workspace() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {first}
    DELETE FROM catalog_app_lexical_document WHERE workspace_id = OLD.id;
    DELETE FROM catalog_app_lexical_group_stats WHERE group_id IN (
        SELECT id FROM catalog_app_lexical_group WHERE workspace_id = OLD.id);
    DELETE FROM catalog_app_lexical_group WHERE workspace_id = OLD.id;
    DELETE FROM catalog_app_lexical_source_totals WHERE workspace_id = OLD.id;
    DELETE FROM catalog_app_lexical_backfill WHERE workspace_id = OLD.id;
    DELETE FROM catalog_app_lexical_block WHERE workspace_id = OLD.id;
    DELETE FROM catalog_app_lexical_compaction WHERE workspace_id = OLD.id;
    DELETE FROM catalog_app_lexical_change WHERE workspace_id = OLD.id;
    RETURN OLD;
END;
$$;
"""

FORWARD = """
CREATE TABLE catalog_app_lexical_pending (
    workspace_id integer NOT NULL,
    analyzer smallint NOT NULL,
    term text COLLATE "C" NOT NULL,
    group_id integer NOT NULL,
    change_id bigint NOT NULL,
    data bytea NOT NULL,
    PRIMARY KEY (workspace_id, analyzer, term, group_id, change_id)
);
-- Every document above its watermark gets a change row if it has none (workspaces indexed before
-- the change log existed), so each pending posting is named by a change, as a write names it.
INSERT INTO catalog_app_lexical_change (workspace_id, analyzer, seq)
SELECT d.workspace_id, d.analyzer, d.seq FROM catalog_app_lexical_document d
LEFT JOIN catalog_app_lexical_compaction c ON c.workspace_id = d.workspace_id AND c.analyzer = d.analyzer
WHERE d.seq > coalesce(c.watermark, 0) AND NOT EXISTS (SELECT 1 FROM catalog_app_lexical_change l
    WHERE l.workspace_id = d.workspace_id AND l.analyzer = d.analyzer AND l.seq = d.seq)
ORDER BY d.seq;
INSERT INTO catalog_app_lexical_pending (workspace_id, analyzer, term, group_id, change_id, data)
SELECT p.workspace_id, p.analyzer, p.term, p.group_id, l.first_id,
       string_agg(int8send(p.seq) || int4send(p.tf) || int4send(p.length), ''::bytea)
FROM catalog_app_lexical_posting p
JOIN (SELECT workspace_id, analyzer, min(id) AS first_id FROM catalog_app_lexical_change GROUP BY 1, 2) l
    ON l.workspace_id = p.workspace_id AND l.analyzer = p.analyzer
LEFT JOIN catalog_app_lexical_compaction c ON c.workspace_id = p.workspace_id AND c.analyzer = p.analyzer
WHERE p.seq > coalesce(c.watermark, 0) OR EXISTS (SELECT 1 FROM catalog_app_lexical_change x
    WHERE x.workspace_id = p.workspace_id AND x.analyzer = p.analyzer AND x.seq = p.seq)
GROUP BY 1, 2, 3, 4, 5;
DROP TABLE catalog_app_lexical_posting, catalog_app_lexical_term_stats;
""" + FORGET.replace("{first}", "DELETE FROM catalog_app_lexical_pending WHERE workspace_id = OLD.id;")

BACKWARD = """
CREATE TABLE catalog_app_lexical_term_stats (
    workspace_id integer NOT NULL,
    analyzer smallint NOT NULL,
    term text COLLATE "C" NOT NULL,
    collection varchar(64) NOT NULL,
    status varchar(8) NOT NULL,
    df integer NOT NULL,
    max_tf integer NOT NULL,
    min_length integer NOT NULL,
    PRIMARY KEY (workspace_id, analyzer, term, collection, status)
) WITH (fillfactor = 50);
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
DROP TABLE catalog_app_lexical_pending;
""" + FORGET.replace("{first}", """DELETE FROM catalog_app_lexical_posting WHERE workspace_id = OLD.id;
    DELETE FROM catalog_app_lexical_term_stats WHERE workspace_id = OLD.id;""")


class Migration(migrations.Migration):

    dependencies = [
        ('catalog_app', '0017_lexical_block_digest'),
    ]

    operations = [
        migrations.RunSQL(FORWARD, BACKWARD),
        migrations.DeleteModel(name='LexicalPosting'),
        migrations.DeleteModel(name='LexicalTermStats'),
        migrations.CreateModel(
            name='LexicalPending',
            fields=[
                ('pk', models.CompositePrimaryKey('workspace_id', 'analyzer', 'term', 'group_id', 'change_id', blank=True, editable=False, primary_key=True, serialize=False)),
                ('workspace_id', models.IntegerField()),
                ('analyzer', models.SmallIntegerField()),
                ('term', models.TextField()),
                ('group_id', models.IntegerField()),
                ('change_id', models.BigIntegerField()),
                ('data', models.BinaryField()),
            ],
            options={'db_table': 'catalog_app_lexical_pending', 'managed': False},
        ),
    ]
