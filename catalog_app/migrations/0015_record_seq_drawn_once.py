"""A record draws its global ``seq`` once. The column's default (``nextval``, from 0002) runs
before the insert trigger of 0012, which draws ``seq`` again under the workspace counter's lock,
so every record used two values of the sequence (seqs stepped by 2). The column default becomes
a constant the trigger always overwrites; Django's state keeps ``db_default`` (an insert still
leaves the column to the database), only the value the database fills in before the trigger
changes.
"""

from django.db import migrations

FORWARD = "ALTER TABLE catalog_app_record ALTER COLUMN seq SET DEFAULT 0"
BACKWARD = "ALTER TABLE catalog_app_record ALTER COLUMN seq SET DEFAULT nextval('catalog_app_record_seq')"


class Migration(migrations.Migration):

    dependencies = [
        ('catalog_app', '0014_lexical_blocks'),
    ]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
