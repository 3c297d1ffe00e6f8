"""Each block's content digest, ``sha256(data)``, computed by PostgreSQL whenever a block is
written, so a query can name the blocks its process already holds (``catalog_app.lexical.
block_cache``) and receive only the others' data."""

from django.db import migrations

FORWARD = ("ALTER TABLE catalog_app_lexical_block "
           "ADD COLUMN digest bytea GENERATED ALWAYS AS (sha256(data)) STORED")
BACKWARD = "ALTER TABLE catalog_app_lexical_block DROP COLUMN digest"


class Migration(migrations.Migration):

    dependencies = [
        ('catalog_app', '0016_lexical_change_span'),
    ]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
