"""A workspace's counter row also holds the bytes its records store, for the storage quota
(``catalog_app.services.storage_quota``): the record insert trigger of 0012 adds each new
record's text and content bytes (UTF-8, content as the JSON text PostgreSQL writes) under the
same row lock that numbers it, so the count is exact with concurrent writers and a write that
rolls back takes its bytes back with it. Existing workspaces are counted from their records.
"""
from django.db import migrations, models

COUNT_EXISTING = """
UPDATE catalog_app_workspacerecordcounter c
SET stored_bytes = s.bytes
FROM (SELECT workspace_id, sum(octet_length(text) + octet_length(content::text)) AS bytes
      FROM catalog_app_record GROUP BY workspace_id) s
WHERE c.workspace_id = s.workspace_id;
"""

TRIGGER = """
CREATE OR REPLACE FUNCTION catalog_app_record_number() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    size bigint := octet_length(NEW.text) + octet_length(NEW.content::text);
BEGIN
    INSERT INTO catalog_app_workspacerecordcounter AS c (workspace_id, last_seq, stored_bytes)
    VALUES (NEW.workspace_id, 1, size)
    ON CONFLICT (workspace_id) DO UPDATE SET last_seq = c.last_seq + 1, stored_bytes = c.stored_bytes + size
    RETURNING c.last_seq INTO NEW.workspace_seq;
    NEW.seq := nextval('catalog_app_record_seq');
    RETURN NEW;
END
$$;
"""

TRIGGER_BEFORE = """
CREATE OR REPLACE FUNCTION catalog_app_record_number() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO catalog_app_workspacerecordcounter AS c (workspace_id, last_seq) VALUES (NEW.workspace_id, 1)
    ON CONFLICT (workspace_id) DO UPDATE SET last_seq = c.last_seq + 1
    RETURNING c.last_seq INTO NEW.workspace_seq;
    NEW.seq := nextval('catalog_app_record_seq');
    RETURN NEW;
END
$$;
"""


class Migration(migrations.Migration):

    dependencies = [
        ('catalog_app', '0021_dead_letter_and_task_receipt'),
    ]

    operations = [
        migrations.AddField(
            model_name='workspacerecordcounter',
            name='stored_bytes',
            field=models.BigIntegerField(default=0, db_default=0),
        ),
        migrations.RunSQL(COUNT_EXISTING, migrations.RunSQL.noop),
        migrations.RunSQL(TRIGGER, TRIGGER_BEFORE),
    ]
