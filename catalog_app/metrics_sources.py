"""The catalog's gauges for ``GET /metrics``, read from the database at scrape time
(``memseek_site.metrics.gauge_source``): the enrichment backlog and the lexical index's
compaction backlog. Both are counts over every workspace; each is one statement on a partial or
primary-key index."""
from __future__ import annotations

from django.db import connection

from memseek_site.metrics import gauge_source

from .lexical.tables import PENDING
from .models import Record

RECORD = Record._meta.db_table


@gauge_source("memseek_enrichment_backlog_records", "Records written but not yet enriched (not ready).")
def enrichment_backlog() -> dict[tuple[str, ...], float]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {RECORD} WHERE enriched_at IS NULL")
        return {(): cursor.fetchone()[0]}


@gauge_source("memseek_enrichment_backlog_oldest_age_seconds",
              "Age of the oldest record not yet enriched (0 when none is waiting).")
def enrichment_backlog_age() -> dict[tuple[str, ...], float]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT coalesce(extract(epoch FROM now() - min(created_at)), 0) FROM {RECORD} "
                       "WHERE enriched_at IS NULL")
        return {(): float(cursor.fetchone()[0])}


@gauge_source("memseek_lexical_pending_rows",
              "Logged posting changes of the lexical index not yet folded into its blocks by a compaction.")
def lexical_pending_rows() -> dict[tuple[str, ...], float]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {PENDING}")
        return {(): cursor.fetchone()[0]}
