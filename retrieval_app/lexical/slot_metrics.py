"""The retrieval-slot gauges for ``GET /metrics``: how many of the ``LEXICAL_RETRIEVAL_SLOTS``
are held right now, by any process on the database (the advisory locks of ``slots``)."""
from __future__ import annotations

from django.db import connection

from memseek_site.conf import memseek_setting
from memseek_site.metrics import gauge_source

from .slots import SLOT_LOCK_CLASS


@gauge_source("memseek_retrieval_slots_in_use", "Lexical retrieval slots held now, across every process.")
def retrieval_slots_in_use() -> dict[tuple[str, ...], float]:
    with connection.cursor() as cursor:
        # A two-key advisory lock shows its first key as classid and objsubid 2.
        cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 "
                       "AND classid = %s::bigint::oid AND granted", [SLOT_LOCK_CLASS])
        return {(): cursor.fetchone()[0]}


@gauge_source("memseek_retrieval_slots", "Lexical retrieval slots configured (LEXICAL_RETRIEVAL_SLOTS).")
def retrieval_slots() -> dict[tuple[str, ...], float]:
    return {(): memseek_setting("LEXICAL_RETRIEVAL_SLOTS")}
