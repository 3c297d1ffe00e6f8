from django.db import migrations
from pgvector.django import VectorExtension


class Migration(migrations.Migration):
    initial = True
    dependencies = []
    operations = [
        VectorExtension(),
        migrations.RunSQL("CREATE SEQUENCE catalog_app_record_seq", "DROP SEQUENCE catalog_app_record_seq"),
    ]
