"""Feedback racing an erasure of a record it names: the feedback waits for the erasure (the shared
workspace write lock, ``catalog_app.write_locks``) and then refuses the erased record as no longer
delivered (``422 record_not_in_receipt`` at its path), instead of failing on the record's foreign
key; nothing of the refused feedback is stored."""
from __future__ import annotations

import threading
import time
import uuid

import pytest
from django.db import connection as main_connection
from django.db import transaction

from catalog_app.services.record_erase import ErasureTarget, records_erase
from retrieval_app.models import Feedback, RecordUtility
from tests.retrieval_app.factories import event, fact, load, retrieve, write

pytestmark = pytest.mark.django_db(transaction=True)


def _advisory_waiters() -> int:
    with main_connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
        return cursor.fetchone()[0]


def test_feedback_waiting_on_an_erasure_refuses_the_erased_record(workspace, api):
    loaded = load(workspace)
    doomed, kept = write(loaded, [fact("budget", "budget is 50k"), event("budget meeting")])
    receipt_id = retrieve(api, {"query": "budget"})["receiptId"]
    erased, release, answers = threading.Event(), threading.Event(), []

    def eraser():
        from django.db import connection

        try:
            with transaction.atomic():  # the erasure's locks stay held until this block ends
                records_erase(workspace=loaded, target=ErasureTarget(record_id=uuid.UUID(doomed)), actor_key_id=None,
                              dry_run=False)
                erased.set()
                release.wait(60)
        finally:
            connection.close()

    def sender():
        from django.db import connection

        try:
            answers.append(api.post(f"/receipts/{receipt_id}/feedback",
                                    {"outcome": "success", "recordIds": [doomed, kept]}, format="json"))
        finally:
            connection.close()

    erasing = threading.Thread(target=eraser)
    erasing.start()
    assert erased.wait(60)
    sending = threading.Thread(target=sender)
    sending.start()
    try:
        deadline = time.monotonic() + 60
        while _advisory_waiters() == 0 and time.monotonic() < deadline and sending.is_alive():
            time.sleep(0.05)
        assert _advisory_waiters() == 1, "the feedback did not wait for the erasure's workspace lock"
    finally:
        release.set()
        erasing.join()
        sending.join()
    (answer,) = answers
    assert answer.status_code == 422, answer.json()
    assert (answer.json()["error"], answer.json()["path"]) == ("record_not_in_receipt", "recordIds[0]")
    assert not Feedback.objects.filter(receipt_id=receipt_id).exists()
    assert not RecordUtility.objects.filter(record_id__in=[doomed, kept]).exists()
    # The record it may still name takes feedback as before.
    ok = api.post(f"/receipts/{receipt_id}/feedback", {"outcome": "success", "recordIds": [kept]}, format="json")
    assert ok.status_code == 201, ok.json()
    main_connection.close()
