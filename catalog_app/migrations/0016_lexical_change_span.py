"""The change log by (workspace, id), so the write path reads how long a workspace's log is
from its first and last ids (two index probes) instead of counting its rows
(``catalog_app.lexical.compaction.lexical_compaction_due``)."""

from django.db import migrations

FORWARD = "CREATE INDEX lexical_change_workspace_id ON catalog_app_lexical_change (workspace_id, id)"
BACKWARD = "DROP INDEX lexical_change_workspace_id"


class Migration(migrations.Migration):

    dependencies = [
        ('catalog_app', '0015_record_seq_drawn_once'),
    ]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
