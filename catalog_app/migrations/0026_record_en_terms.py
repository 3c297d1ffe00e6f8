"""The stemmed English analyzer's stored terms (``en_v1``, ``catalog_app.en_terms``): per record
term frequencies and length, NULL on the records written before it (the index's reconcile
analyses those when it adds them). The backfill progress is forgotten so that the next
``lexical_backfill`` visits every record again and adds them under the new analyzer (a
reconcile changes nothing for the analyzers already indexed)."""
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('catalog_app', '0025_embedding_switch'),
    ]

    operations = [
        migrations.AddField(
            model_name='record',
            name='en_tf',
            field=models.JSONField(default=None, null=True),
        ),
        migrations.AddField(
            model_name='record',
            name='en_length',
            field=models.PositiveIntegerField(default=None, null=True),
        ),
        migrations.RunSQL("DELETE FROM catalog_app_lexical_backfill", migrations.RunSQL.noop),
    ]
