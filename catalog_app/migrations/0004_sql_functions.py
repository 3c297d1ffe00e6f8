"""SQL helpers for typed reads of JSON values.

``memseek_timestamptz(text)`` parses an ISO 8601 timestamp and returns NULL instead of raising
for anything else, so a typed filter or sort over a declared datetime field can never fail a
query because of one odd stored value (the canonical recheck in Python decides exactly).
"""
from django.db import migrations

CREATE = """
CREATE FUNCTION memseek_timestamptz(value text) RETURNS timestamptz
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
BEGIN
    IF value !~ '^\\d{4}-\\d{2}-\\d{2}[Tt ]\\d{2}:\\d{2}(:\\d{2}(\\.\\d+)?)?([Zz]|[+-]\\d{2}(:?\\d{2})?)$' THEN
        RETURN NULL;
    END IF;
    RETURN value::timestamptz;
EXCEPTION WHEN others THEN
    RETURN NULL;
END;
$$;
"""


class Migration(migrations.Migration):
    dependencies = [("catalog_app", "0003_record_dedupe_hash")]
    operations = [migrations.RunSQL(CREATE, "DROP FUNCTION memseek_timestamptz(text)")]
