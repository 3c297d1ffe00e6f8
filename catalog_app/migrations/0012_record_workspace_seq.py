"""Each record gets its workspace's own ordinal, ``workspace_seq``, which the API shows as
``seq``, so no response reveals how much another workspace writes.

A BEFORE INSERT trigger takes the next ordinal from the workspace's counter row and only then
draws the global ``seq``: the counter's row lock, held until commit, orders a workspace's
concurrent writers, so within a workspace ``seq`` and ``workspace_seq`` sort alike. Existing rows
are numbered in their ``seq`` order.
"""
import django.db.models.deletion
from django.db import migrations, models

NUMBER_EXISTING = """
UPDATE catalog_app_record r SET workspace_seq = o.n
FROM (SELECT id, row_number() OVER (PARTITION BY workspace_id ORDER BY seq) AS n FROM catalog_app_record) o
WHERE r.id = o.id;
INSERT INTO catalog_app_workspacerecordcounter (workspace_id, last_seq)
SELECT workspace_id, max(workspace_seq) FROM catalog_app_record GROUP BY workspace_id;
"""

TRIGGER = """
CREATE FUNCTION catalog_app_record_number() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO catalog_app_workspacerecordcounter AS c (workspace_id, last_seq) VALUES (NEW.workspace_id, 1)
    ON CONFLICT (workspace_id) DO UPDATE SET last_seq = c.last_seq + 1
    RETURNING c.last_seq INTO NEW.workspace_seq;
    NEW.seq := nextval('catalog_app_record_seq');
    RETURN NEW;
END
$$;
CREATE TRIGGER catalog_app_record_number BEFORE INSERT ON catalog_app_record
FOR EACH ROW EXECUTE FUNCTION catalog_app_record_number();
"""

DROP_TRIGGER = """
DROP TRIGGER catalog_app_record_number ON catalog_app_record;
DROP FUNCTION catalog_app_record_number();
"""


class Migration(migrations.Migration):

    dependencies = [
        ('catalog_app', '0011_api_key_capabilities'),
    ]

    operations = [
        migrations.CreateModel(
            name='WorkspaceRecordCounter',
            fields=[
                ('workspace', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, serialize=False, to='catalog_app.workspace')),
                ('last_seq', models.BigIntegerField(default=0)),
            ],
        ),
        migrations.AddField(
            model_name='record',
            name='workspace_seq',
            field=models.BigIntegerField(db_default=0, editable=False),
        ),
        migrations.RunSQL(NUMBER_EXISTING, migrations.RunSQL.noop),
        migrations.AddConstraint(
            model_name='record',
            constraint=models.UniqueConstraint(fields=('workspace', 'workspace_seq'), name='record_workspace_seq'),
        ),
        migrations.RunSQL(TRIGGER, DROP_TRIGGER),
    ]
