"""Touch on read: the one rule for what returning a record to a caller writes.

Every read that hands records to a caller — search hits, ``GET /context`` rows, the items
``/retrieve`` delivers, ``GET /records/{id}`` — touches each of them once: ``last_accessed``
becomes the time of the read and ``access_count`` grows by one (``/retrieve``'s frequency
factor reads it as the record's number of reads). Nothing else changes. Reads that only
evaluate (``POST /evaluate``) or browse (timelines, documents, the console) touch nothing.
Whether reads touch at all is ``TOUCH_ON_READ``, checked by the caller. A touch is a write: it
runs on the primary also when a read replica serves the read (``memseek_site.replicas``).
"""
from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db import DEFAULT_DB_ALIAS
from django.db.models import F
from django.utils import timezone

from memseek_site.replicas import serving

from ..models import Record


def records_touch(*, record_ids: Iterable, now: datetime | None = None) -> int:
    """Touch ``record_ids`` as read at ``now`` (default: the current time); returns the number
    of records updated (unknown ids are skipped)."""
    ids = list(record_ids)
    if not ids:
        return 0
    # last_accessed and access_count are among the few columns that change after insert (models.py).
    with serving(DEFAULT_DB_ALIAS):
        return Record.objects.filter(pk__in=ids).update(last_accessed=now or timezone.now(),
                                                        access_count=F("access_count") + 1)
