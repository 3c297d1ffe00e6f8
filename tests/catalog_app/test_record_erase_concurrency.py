"""Erasure beside other writers: a row a worker holds makes the erasure step back and answer
``503 erasure_busy`` rather than deadlock, and erasures racing ingest in the same workspace
neither deadlock nor leave the lexical index disagreeing with the records."""
from __future__ import annotations

import threading

import pytest
from django.db import connection as main_connection
from django.db import transaction

from catalog_app.lexical.check import lexical_check
from catalog_app.models import Record, Workspace
from catalog_app.services.record_erase import ErasureTarget, records_erase
from catalog_app.services.workspaces import workspace_create
from memseek_site.errors import ApiError
from tests.catalog_app.lexical_support import load_lexical_catalog, write

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_row_a_worker_holds_is_erasure_busy_and_nothing_changes(tmp_path):
    space, _ = workspace_create(name="held")
    load_lexical_catalog(space, tmp_path / "catalog")
    held_id, other_id = write(space, {"text": "held by a worker", "entity": "gone"},
                              {"text": "not held", "entity": "gone"})
    locked, release = threading.Event(), threading.Event()

    def worker():
        from django.db import connection

        try:
            with transaction.atomic():
                list(Record.objects.select_for_update().filter(pk=held_id))  # as enrichment claims a record
                locked.set()
                release.wait(30)
        finally:
            connection.close()

    thread = threading.Thread(target=worker)
    thread.start()
    try:
        assert locked.wait(30)
        with pytest.raises(ApiError) as caught:
            records_erase(workspace=space, target=ErasureTarget(entity="gone"), actor_key_id=None, dry_run=False)
        assert (caught.value.code, caught.value.status) == ("erasure_busy", 503)
        assert set(Record.objects.filter(entity="gone").values_list("pk", flat=True)) == {held_id, other_id}
    finally:
        release.set()
        thread.join()
    result = records_erase(workspace=space, target=ErasureTarget(entity="gone"), actor_key_id=None, dry_run=False)
    assert result.counts["records"] == 2 and not Record.objects.filter(entity="gone").exists()
    assert lexical_check(workspace_id=space.pk) == []
    main_connection.close()


def test_erasures_racing_writers_neither_deadlock_nor_break_the_index(tmp_path):
    space, _ = workspace_create(name="racing")
    load_lexical_catalog(space, tmp_path / "catalog")
    errors = []

    def writer(number):
        from django.db import connection

        try:
            for round_ in range(3):
                write(Workspace.objects.get(pk=space.pk),
                      *({"text": f"shared words round {round_} writer {number} item {i}", "type": "fact",
                         "key": f"k{i % 2}", "entity": ("gone", "kept")[i % 2]} for i in range(4)))
        except Exception as error:  # reported below: the assertion names it
            errors.append(error)
        finally:
            connection.close()

    def eraser():
        from django.db import connection

        try:
            for _ in range(3):
                records_erase(workspace=Workspace.objects.get(pk=space.pk), target=ErasureTarget(entity="gone"),
                              actor_key_id=None, dry_run=False)
        except Exception as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)] + [threading.Thread(target=eraser)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert lexical_check(workspace_id=space.pk) == []
    records_erase(workspace=space, target=ErasureTarget(entity="gone"), actor_key_id=None, dry_run=False)
    assert not Record.objects.filter(workspace=space, entity="gone").exists()
    assert Record.objects.filter(workspace=space, entity="kept").count() == 3 * 3 * 2  # writers × rounds × items
    assert lexical_check(workspace_id=space.pk) == []
    main_connection.close()
