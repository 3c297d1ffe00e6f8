"""Pending rows per (workspace, analyzer, term, change) instead of per (…, group, change): each
packed posting carries its group (``catalog_app.lexical.blocks.ROW``: seq, group, tf, length),
so a write stores one row per term it touches rather than one per term and group, about a third
of the rows on a corpus of a dozen groups, and a compaction deletes as many fewer. The existing
rows are repacked: every 16-byte (seq, tf, length) posting of a (term, group) row gains its
group, and a change's rows of one term join into one. Backward splits them again by group.
"""

from django.db import migrations, models

FORWARD = """
CREATE TABLE catalog_app_lexical_pending_by_term (
    workspace_id integer NOT NULL,
    analyzer smallint NOT NULL,
    term text COLLATE "C" NOT NULL,
    change_id bigint NOT NULL,
    data bytea NOT NULL,
    CONSTRAINT catalog_app_lexical_pending_by_term_pkey PRIMARY KEY (workspace_id, analyzer, term, change_id)
);
INSERT INTO catalog_app_lexical_pending_by_term (workspace_id, analyzer, term, change_id, data)
SELECT p.workspace_id, p.analyzer, p.term, p.change_id,
       string_agg(substring(p.data FROM 16 * i + 1 FOR 8) || int4send(p.group_id)
                  || substring(p.data FROM 16 * i + 9 FOR 8), ''::bytea)
FROM catalog_app_lexical_pending p CROSS JOIN generate_series(0, length(p.data) / 16 - 1) i
GROUP BY 1, 2, 3, 4;
DROP TABLE catalog_app_lexical_pending;
ALTER TABLE catalog_app_lexical_pending_by_term RENAME TO catalog_app_lexical_pending;
ALTER INDEX catalog_app_lexical_pending_by_term_pkey RENAME TO catalog_app_lexical_pending_pkey;
"""

BACKWARD = """
CREATE TABLE catalog_app_lexical_pending_by_group (
    workspace_id integer NOT NULL,
    analyzer smallint NOT NULL,
    term text COLLATE "C" NOT NULL,
    group_id integer NOT NULL,
    change_id bigint NOT NULL,
    data bytea NOT NULL,
    CONSTRAINT catalog_app_lexical_pending_by_group_pkey
        PRIMARY KEY (workspace_id, analyzer, term, group_id, change_id)
);
INSERT INTO catalog_app_lexical_pending_by_group (workspace_id, analyzer, term, group_id, change_id, data)
SELECT p.workspace_id, p.analyzer, p.term,
       ('x' || encode(substring(p.data FROM 20 * i + 9 FOR 4), 'hex'))::bit(32)::integer, p.change_id,
       string_agg(substring(p.data FROM 20 * i + 1 FOR 8) || substring(p.data FROM 20 * i + 13 FOR 8), ''::bytea)
FROM catalog_app_lexical_pending p CROSS JOIN generate_series(0, length(p.data) / 20 - 1) i
GROUP BY 1, 2, 3, 4, 5;
DROP TABLE catalog_app_lexical_pending;
ALTER TABLE catalog_app_lexical_pending_by_group RENAME TO catalog_app_lexical_pending;
ALTER INDEX catalog_app_lexical_pending_by_group_pkey RENAME TO catalog_app_lexical_pending_pkey;
"""


class Migration(migrations.Migration):

    dependencies = [
        ('catalog_app', '0019_record_recent_collection'),
    ]

    operations = [
        migrations.RunSQL(FORWARD, BACKWARD),
        migrations.DeleteModel(name='LexicalPending'),
        migrations.CreateModel(
            name='LexicalPending',
            fields=[
                ('pk', models.CompositePrimaryKey('workspace_id', 'analyzer', 'term', 'change_id', blank=True, editable=False, primary_key=True, serialize=False)),
                ('workspace_id', models.IntegerField()),
                ('analyzer', models.SmallIntegerField()),
                ('term', models.TextField()),
                ('change_id', models.BigIntegerField()),
                ('data', models.BinaryField()),
            ],
            options={'db_table': 'catalog_app_lexical_pending', 'managed': False},
        ),
    ]
