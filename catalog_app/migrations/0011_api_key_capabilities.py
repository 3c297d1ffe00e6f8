"""Keys carry capabilities; every existing key keeps all three (what it could do before)."""
import django.contrib.postgres.fields
from django.db import migrations, models

import catalog_app.models


class Migration(migrations.Migration):

    dependencies = [
        ('catalog_app', '0010_lexical_term_stats_by_collection'),
    ]

    operations = [
        migrations.AddField(
            model_name='apikey',
            name='capabilities',
            field=django.contrib.postgres.fields.ArrayField(base_field=models.CharField(choices=[('read', 'read'), ('write', 'write'), ('review', 'review')], max_length=16), default=catalog_app.models.all_capabilities, size=None),
        ),
        migrations.AddConstraint(
            model_name='apikey',
            constraint=models.CheckConstraint(condition=models.Q(('capabilities__contained_by', ['read', 'write', 'review'])), name='api_key_known_capabilities'),
        ),
    ]
