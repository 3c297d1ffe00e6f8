"""Touch on read (``catalog_app.services.record_touch``): one rule for every read that returns
records — ``last_accessed`` becomes the time of the read, ``access_count`` grows by one."""
from __future__ import annotations

import uuid
from datetime import datetime, timezone

from catalog_app.models import Record
from catalog_app.services.record_touch import records_touch
from tests.catalog_app.factories import record_make

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
READ = datetime(2026, 2, 1, tzinfo=timezone.utc)


def test_a_touch_sets_last_accessed_and_counts_one_read(catalog):
    touched, untouched = record_make(catalog), record_make(catalog)
    Record.objects.filter(pk__in=[touched.pk, untouched.pk]).update(last_accessed=T0, access_count=2)

    assert records_touch(record_ids=[str(touched.pk), uuid.uuid4()], now=READ) == 1

    assert Record.objects.filter(pk=touched.pk).values_list("last_accessed", "access_count").get() == (READ, 3)
    assert Record.objects.filter(pk=untouched.pk).values_list("last_accessed", "access_count").get() == (T0, 2)


def test_touching_nothing_writes_nothing(catalog, django_assert_num_queries):
    with django_assert_num_queries(0):
        assert records_touch(record_ids=[]) == 0


def test_record_get_counts_its_read_like_every_other_read(api, catalog):
    record = record_make(catalog)
    api.get(f"/records/{record.id}")
    api.get(f"/records/{record.id}")
    assert Record.objects.get(pk=record.pk).access_count == 2


def test_record_get_counts_nothing_when_touch_on_read_is_off(api, catalog, settings):
    settings.MEMSEEK = {"TOUCH_ON_READ": False}
    record = record_make(catalog)
    api.get(f"/records/{record.id}")
    assert Record.objects.get(pk=record.pk).access_count == 0
