"""The SDK's forget methods against a live server: ``delete_record`` (``DELETE /records/{id}``)
and ``erase_entity`` (``POST /erase``), typed results, dry runs, and the server's errors as
typed exceptions."""
from __future__ import annotations

import uuid

import pytest

from memseek_client import NotFound, Unprocessable
from memseek_client.models import ErasureResult

from .conftest import LIVE

pytestmark = LIVE


def _write(client, entity: str, *texts: str) -> list[str]:
    result = client.write_records([{"entity": entity, "collection": "main", "type": "note", "text": text}
                                   for text in texts])
    return [outcome.id for outcome in result.inserted]


def test_delete_record_counts_on_a_dry_run_then_forgets_the_record(client):
    record_id, kept_id = _write(client, "contact.forget-one", "Forget this note.", "Keep this note.")
    counted = client.delete_record(record_id, dry_run=True)
    assert isinstance(counted, ErasureResult)
    assert counted.dry_run and counted.audit_id is None and counted.counts["records"] == 1
    assert client.get_record(record_id).id == record_id
    done = client.delete_record(record_id)
    assert not done.dry_run and done.audit_id is not None and done.counts == counted.counts
    with pytest.raises(NotFound) as caught:
        client.get_record(record_id)
    assert caught.value.code == "record_not_found"
    assert client.get_record(kept_id).id == kept_id
    with pytest.raises(NotFound):
        client.delete_record(record_id)
    with pytest.raises(NotFound):
        client.delete_record(str(uuid.uuid4()))


def test_erase_entity_forgets_every_record_of_the_entity(client):
    _write(client, "contact.forget-all", "First note.", "Second note.")
    _write(client, "contact.forget-not", "Other entity's note.")
    assert client.erase_entity("contact.forget-all", dry_run=True).counts["records"] == 2
    assert len(client.timeline("contact.forget-all").records) == 2
    result = client.erase_entity("contact.forget-all", collection="main")
    assert result.counts["records"] == 2 and not result.dry_run
    assert client.timeline("contact.forget-all").records == ()
    assert len(client.timeline("contact.forget-not").records) == 1


def test_a_bad_erase_is_a_typed_422_with_its_path(client):
    with pytest.raises(Unprocessable) as caught:
        client.erase_entity("contact.x", collection="Not A Name")
    assert (caught.value.code, caught.value.path) == ("request_schema", "collection")
