"""``record_ingest`` below the API: the batch insert stores exactly what preparation produced,
whatever mix of NULL and set values a batch holds, keeps the insert-time dedupe race, and
takes the lock of every keyed entity."""
import hashlib
from datetime import datetime, timezone

from django.db import connection
from django.utils import timezone as django_timezone

from catalog_app.catalog.hashing import canonical_json
from catalog_app.catalog.runtime import catalog_for_workspace
from catalog_app.models import Record
from catalog_app.write_locks import WORKSPACE_LOCK_CLASS
from catalog_app.services import record_ingest
from catalog_app.services.record_input import prepare_record
from catalog_app.services.record_ingest import record_ingest_batch


def parents(workspace, count):
    items = [{"entity": "contact.maria", "type": "event", "text": f"parent {n}"} for n in range(count)]
    items.append({"entity": "contact.maria", "type": "fact", "key": "status", "text": "active customer"})
    result = record_ingest_batch(workspace=workspace, items=items)
    return [str(outcome.id) for outcome in result.inserted]


def mixed_batch(events, status_value):
    """Items that between them leave each nullable or list-valued column unset and set, with
    texts that need quoting in any SQL or array literal."""
    return [
        {"entity": "contact.maria", "type": "event", "text": "NULL"},
        {"entity": "contact.maria", "type": "fact", "key": "role", "text": 'says "hi" \\ {a,b} ,NULL',
         "occurred_at": "2026-01-02T03:04:05.123456+05:30", "dedupe_key": "d-1",
         "derived_from": [events[1], events[0]]},
        {"entity": "contact.ines", "type": "event", "text": "",
         "content": {"speaker": "Inès", "tags": ["a", ""], "extra": {"n": 1.5, "tiny": 0.1, "big": 9007199254740993,
                                                                     "list": [None, True, "é\n\t'"]}},
         "occurred_at": "2026-01-01T00:00:00Z"},
        {"entity": "deal.42", "collection": "outcomes", "type": "outcome", "text": "won", "dedupe_key": "d-2",
         "scores": {"confidence": 0.3}, "annotations": {"review": {"verdict": "good", "score": 0.25}}},
        {"entity": "contact.ines", "type": "fact", "key": "clé ☃", "text": "Ines moved to Lyon",
         "derived_from": [events[2], events[0], events[1]]},
        {"entity": "contact.maria", "type": "fact", "key": "status", "tombstone": True,
         "derived_from": [status_value]},
    ]


def test_a_mixed_batch_stores_exactly_the_prepared_values(catalog):
    *events, status_value = parents(catalog, 3)
    items = mixed_batch(events, status_value)
    result = record_ingest_batch(workspace=catalog, items=items)
    assert [outcome.index for outcome in result.inserted] == list(range(len(items)))
    stored = [Record.objects.get(pk=outcome.id) for outcome in result.inserted]
    workspace_catalog = catalog_for_workspace(catalog)
    hashes = {d.name: d.hash for d in workspace_catalog.all("processor") if d.active}
    now = django_timezone.now()
    for item, record, outcome in zip(items, stored, result.inserted):
        expected = prepare_record(item, workspace_catalog, hashes, now)
        for column in ("entity", "collection", "collection_version", "collection_hash", "type", "key", "status",
                       "text", "content", "scores", "annotations", "tombstone", "dedupe_key", "dedupe_hash",
                       "bm25_tf", "bm25_length"):
            assert getattr(record, column) == getattr(expected, column), (outcome.index, column)
        assert record.annotation_meta.keys() == expected.annotation_meta.keys()
        for name, meta in record.annotation_meta.items():
            assert {**meta, "completed_at": None} == {**expected.annotation_meta[name], "completed_at": None}
        assert record.derived_from == sorted(expected.derived_from)
        assert record.occurred_at == (expected.occurred_at or record.created_at)
        assert record.last_accessed == record.created_at
        assert record.enriched_at == (record.created_at if expected.ready_at_insert else None)
        assert outcome.ready is expected.ready_at_insert
    assert [record.key for record in stored] == [None, "role", None, None, "clé ☃", "status"]
    assert [record.dedupe_key for record in stored] == [None, "d-1", None, "d-2", None, None]
    assert [record.depth for record in stored] == [0, 1, 0, 0, 1, 0]
    assert stored[1].occurred_at == datetime(2026, 1, 1, 21, 34, 5, 123456, tzinfo=timezone.utc)
    assert stored[2].content["extra"]["big"] == 9007199254740993
    assert [record.seq for record in stored] == sorted(record.seq for record in stored)


def test_a_dedupe_key_committed_after_the_check_is_a_duplicate_at_insert(catalog, monkeypatch):
    first = record_ingest_batch(workspace=catalog, items=[
        {"entity": "e", "type": "event", "text": "once", "dedupe_key": "k"}]).inserted[0]
    real = record_ingest._stored_dedupe
    calls = []

    def blind_first_check(workspace, keys):
        # The first lookup runs before the insert; a concurrent batch has not committed yet.
        calls.append(keys)
        return {} if len(calls) == 1 else real(workspace, keys)

    monkeypatch.setattr(record_ingest, "_stored_dedupe", blind_first_check)
    result = record_ingest_batch(workspace=catalog, items=[
        {"entity": "e", "type": "event", "text": "new"},
        {"entity": "e", "type": "event", "text": "once", "dedupe_key": "k"}])
    assert [outcome.index for outcome in result.inserted] == [0]
    assert result.duplicates == (record_ingest.IngestOutcome(1, first.id, first.ready),)
    assert Record.objects.filter(dedupe_key="k").count() == 1


def _held_advisory_locks() -> set[tuple[int, int, int]]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT classid::bigint, objid::bigint, objsubid FROM pg_locks WHERE locktype = 'advisory' "
                       "AND pid = pg_backend_pid() AND granted")
        return set(cursor.fetchall())


def _entity_lock(entity: str, workspace_id: int) -> tuple[int, int, int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT hashtextextended(%s, %s)", [entity, workspace_id])
        key = cursor.fetchone()[0] % 2**64  # pg_locks shows a bigint key as two unsigned halves
    return key >> 32, key & 0xFFFFFFFF, 1


def test_every_keyed_entity_is_locked_before_the_write(catalog, monkeypatch):
    held = []
    real = record_ingest.lexical_records_changed

    def recording(**kwargs):
        held.append(_held_advisory_locks())
        return real(**kwargs)

    monkeypatch.setattr(record_ingest, "lexical_records_changed", recording)
    keyed = ["contact.Zoë", "contact.ada", "Contact.Bo", "contact.ada", "contact._x"]
    items = [{"entity": entity, "type": "fact", "key": f"k{n}", "text": "x"} for n, entity in enumerate(keyed)]
    items.append({"entity": "contact.events-only", "type": "event", "text": "no key, no lock"})
    record_ingest_batch(workspace=catalog, items=items)
    expected = {_entity_lock(entity, catalog.pk) for entity in set(keyed)}
    expected.add((WORKSPACE_LOCK_CLASS, catalog.pk, 2))  # the shared workspace lock
    assert held == [expected]
    assert _entity_lock("contact.events-only", catalog.pk) not in held[0]


def test_the_dedupe_hash_is_the_sha256_of_the_whole_canonical_payload(catalog):
    """Preparation converts the content to its canonical form once and reuses it for the hash;
    the hash must stay that of the payload converted in one piece (stored hashes compare to it)."""
    *events, status_value = parents(catalog, 3)
    workspace_catalog = catalog_for_workspace(catalog)
    hashes = {d.name: d.hash for d in workspace_catalog.all("processor") if d.active}
    for item in mixed_batch(events, status_value):
        prepared = prepare_record(item, workspace_catalog, hashes, django_timezone.now())
        payload = {key: getattr(prepared, key) for key in ("entity", "collection", "collection_version",
                                                           "collection_hash", "type", "key", "status", "content")}
        occurred_at = prepared.occurred_at
        payload.update(derived_from=sorted(str(parent) for parent in prepared.derived_from),
                       occurred_at=occurred_at.astimezone(timezone.utc).isoformat() if occurred_at else None,
                       scores=item.get("scores"), annotations=item.get("annotations"))
        assert prepared.dedupe_hash == hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()
