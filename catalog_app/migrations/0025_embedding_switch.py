"""The serving runtime of a workspace's vectors and its pending switch (issue #39). Depends on
both 0022 migrations, which it thereby merges."""
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('catalog_app', '0024_operations_request_minutes'),
    ]

    operations = [
        migrations.CreateModel(
            name="EmbeddingSwitch",
            fields=[
                ("workspace", models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True,
                                                   serialize=False, to="catalog_app.workspace")),
                ("serving_runtime", models.CharField(max_length=16, null=True)),
                ("target_runtime", models.CharField(max_length=16, null=True)),
                ("records_total", models.BigIntegerField(default=0)),
                ("records_done", models.BigIntegerField(default=0)),
                ("started_at", models.DateTimeField(null=True)),
                ("swapped_at", models.DateTimeField(null=True)),
            ],
        ),
    ]
