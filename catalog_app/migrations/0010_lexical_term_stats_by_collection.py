"""Term statistics per (workspace, analyzer, term, collection, status) instead of per scope
group: a write upserts one row per distinct term and (collection, status) it touches rather than
one per group, the larger part of what the statistics cost a write. Rebuilt from the postings.
(The model is unmanaged, so only the table changes.)"""
from django.db import migrations

FORWARD = """
DROP TABLE catalog_app_lexical_term_stats;
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
INSERT INTO catalog_app_lexical_term_stats
SELECT p.workspace_id, p.analyzer, p.term, g.collection, g.status, count(*), max(p.tf), min(p.length)
FROM catalog_app_lexical_posting p JOIN catalog_app_lexical_group g ON g.id = p.group_id
GROUP BY 1, 2, 3, 4, 5;
"""

BACKWARD = """
DROP TABLE catalog_app_lexical_term_stats;
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
INSERT INTO catalog_app_lexical_term_stats
SELECT workspace_id, analyzer, term, group_id, count(*), max(tf), min(length)
FROM catalog_app_lexical_posting GROUP BY 1, 2, 3, 4;
"""


class Migration(migrations.Migration):

    dependencies = [
        ("catalog_app", "0009_lexical_index"),
    ]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
