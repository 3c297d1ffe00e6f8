"""``DELETE /records/{id}`` and ``POST /erase``: what goes (whole slots, derived records,
vectors, review audits, index documents and postings), what a dry run leaves, the audit, and
every rejected request changing nothing."""
from __future__ import annotations

import json
import uuid

import pytest
from django.db import connection

from catalog_app.lexical.analyzers import maintained_analyzers
from catalog_app.lexical.blocks import ROW, decode
from catalog_app.lexical.check import lexical_check
from catalog_app.lexical.compaction import lexical_compact
from catalog_app.lexical.tables import BLOCK, DOCUMENT, PENDING, SOURCE_TOTALS
from catalog_app.models import ErasureAudit, Record, RecordEmbedding, ReviewAudit
from catalog_app.services.review import draft_approve

from tests.memseek_site.test_openapi_responses import check

from .factories import record_make

pytestmark = pytest.mark.django_db


def _delete(api, record_id, query: str = ""):
    return api.delete(f"/records/{record_id}{query}")


def _erase(api, body):
    return api.post("/erase", body, format="json")


def _indexed_seqs(workspace_id: int) -> set[int]:
    """Every seq the index still holds anything of: documents, block postings, pending postings."""
    import numpy as np

    with connection.cursor() as cursor:
        cursor.execute(f"SELECT seq FROM {DOCUMENT} WHERE workspace_id = %s", [workspace_id])
        seqs = {row[0] for row in cursor.fetchall()}
        cursor.execute(f"SELECT first_seq, postings, width, data FROM {BLOCK} WHERE workspace_id = %s", [workspace_id])
        for first, count, width, data in cursor.fetchall():
            seqs |= set(decode(first, count, width, bytes(data))[0].tolist())
        cursor.execute(f"SELECT data FROM {PENDING} WHERE workspace_id = %s", [workspace_id])
        for (data,) in cursor.fetchall():
            seqs |= set(np.frombuffer(bytes(data), ROW)["seq"].tolist())
    return seqs


def test_delete_takes_the_whole_slot_its_drafts_and_what_derives_from_it(catalog, api):
    old = record_make(catalog, entity="e1", key="city", type="fact", text="Ada lives in Rome")
    new = record_make(catalog, entity="e1", key="city", type="fact", text="Ada lives in Turin")
    draft = record_make(catalog, entity="e1", key="city", type="fact", text="Ada lives in Milan", status="draft")
    derived = record_make(catalog, entity="e2", text="summary of Turin", derived_from=[new.pk])
    grand = record_make(catalog, entity="e3", text="summary of the summary", derived_from=[derived.pk])
    kept = record_make(catalog, entity="e1", text="Ada likes tea")
    lexical_compact(workspace_id=catalog.pk)  # some postings in blocks, some pending after the next write
    other = record_make(catalog, entity="e1", key="pet", type="fact", text="Ada has a cat")
    body = check(_delete(api, old.pk), "DELETE", "/records/{id}")
    assert body["dry_run"] is False and body["counts"]["records"] == 5
    assert body["counts"]["drafts"] == 1 and body["counts"]["derived"] == 2
    # the current value, the draft and the two summaries, under each maintained analyzer
    assert body["counts"]["index_documents"] == 4 * len(maintained_analyzers())
    gone = {old.pk, new.pk, draft.pk, derived.pk, grand.pk}
    assert not Record.objects.filter(pk__in=gone).exists()
    assert set(Record.objects.filter(workspace=catalog).values_list("pk", flat=True)) == {kept.pk, other.pk}
    assert _indexed_seqs(catalog.pk) == {kept.seq, other.seq}
    assert lexical_check(workspace_id=catalog.pk) == []
    audit = ErasureAudit.objects.get(pk=body["audit_id"])
    assert (audit.kind, audit.counts, audit.workspace_id) == ("record", body["counts"], catalog.pk)
    assert _delete(api, old.pk).status_code == 404


def test_a_dry_run_counts_what_the_delete_then_removes_and_changes_nothing(catalog, api):
    first = record_make(catalog, entity="e1", key="k", type="fact", text="one")
    record_make(catalog, entity="e1", key="k", type="fact", text="two")
    before = list(Record.objects.order_by("seq").values_list("pk", "seq"))
    indexed = _indexed_seqs(catalog.pk)
    counted = check(_delete(api, first.pk, "?dry_run=true"), "DELETE", "/records/{id}")
    assert counted["dry_run"] is True and counted["audit_id"] is None and counted["counts"]["records"] == 2
    assert list(Record.objects.order_by("seq").values_list("pk", "seq")) == before
    assert _indexed_seqs(catalog.pk) == indexed and not ErasureAudit.objects.exists()
    done = _delete(api, first.pk, "?dry_run=false").json()
    assert done["counts"] == counted["counts"] and not Record.objects.exists()


def test_vectors_review_audits_and_source_totals_go_with_the_records(catalog, api):
    draft = record_make(catalog, entity="e1", key="k", type="fact", text="draft value", status="draft")
    approved = draft_approve(workspace=catalog, draft_id=draft.pk, actor="test")
    RecordEmbedding.objects.create(record=approved, workspace=catalog, space="s", embedding=[1.0, 0.0])
    kept = record_make(catalog, entity="e9", text="unrelated")
    body = _delete(api, draft.pk).json()
    assert body["counts"]["embeddings"] == 1 and body["counts"]["review_audits"] == 1
    assert not RecordEmbedding.objects.exists() and not ReviewAudit.objects.exists()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT collection, rows FROM {SOURCE_TOTALS} WHERE workspace_id = %s", [catalog.pk])
        assert cursor.fetchall() == [(kept.collection, 1)]


def test_erase_takes_every_record_of_the_entity_or_of_one_collection(catalog, api):
    record_make(catalog, entity="maria", text="Maria in main")
    in_tickets = record_make(catalog, entity="maria", collection="tickets", type="ticket", text="Maria's ticket")
    other = record_make(catalog, entity="mario", text="Mario in main")
    body = check(_erase(api, {"entity": "maria", "collection": "main"}), "POST", "/erase")
    assert body["counts"]["records"] == 1
    left = set(Record.objects.values_list("pk", flat=True))
    assert other.pk in left and in_tickets.pk in left
    assert _erase(api, {"entity": "maria"}).json()["counts"]["records"] == 1
    assert set(Record.objects.values_list("pk", flat=True)) == {other.pk}
    assert _erase(api, {"entity": "nobody", "dry_run": True}).json()["counts"]["records"] == 0


def test_another_workspaces_record_is_404_and_stays(catalog, api, other_workspace_api):
    theirs = other_workspace_api.post("/records", {"records": [
        {"entity": "e1", "collection": "main", "type": "note", "text": "theirs"}]}, format="json").json()
    their_id = theirs["inserted"][0]["id"]
    response = _delete(api, their_id)
    assert check(response, "DELETE", "/records/{id}", 404)["error"] == "record_not_found"
    assert response.json()["path"] == "id"
    assert _delete(api, uuid.uuid4()).json()["error"] == "record_not_found"
    assert Record.objects.filter(pk=their_id).exists()
    assert _erase(api, {"entity": "e1"}).json()["counts"]["records"] == 0
    assert Record.objects.filter(pk=their_id).exists()


@pytest.mark.parametrize(("query", "path"), [
    ("?dry_run=yes", "dry_run"), ("?dry_run=1", "dry_run"), ("?force=true", "force"),
    ("?dry_run=true&dry_run=false", "dry_run"),
])
def test_a_bad_delete_query_is_422_with_its_path_and_deletes_nothing(catalog, api, query, path):
    record = record_make(catalog, text="stays")
    response = _delete(api, record.pk, query)
    assert response.status_code == 422 and response.json()["path"] == path
    assert Record.objects.filter(pk=record.pk).exists()


@pytest.mark.parametrize("raw", ["not-a-uuid", "1", "%27%20OR%201=1--", "00000000-0000-0000-0000-00000000000g"])
def test_a_malformed_id_is_422_invalid_id(catalog, api, raw):
    response = _delete(api, raw)
    assert response.status_code == 422 and response.json() | {"detail": ""} == {
        "error": "invalid_id", "path": "id", "detail": ""}


@pytest.mark.parametrize(("body", "code", "path"), [
    ({}, "request_schema", "entity"),
    ({"entity": "e1", "force": True}, "request_schema", "force"),
    ({"entity": ""}, "request_schema", "entity"),
    ({"entity": "   "}, "request_schema", "entity"),
    ({"entity": 7}, "request_schema", "entity"),
    ({"entity": ["e1"]}, "request_schema", "entity"),
    ({"entity": None}, "request_schema", "entity"),
    ({"entity": "*"}, "request_schema", "entity"),
    ({"entity": "x" * 256}, "request_schema", "entity"),
    ({"entity": "e1", "collection": "Main"}, "request_schema", "collection"),
    ({"entity": "e1", "collection": ""}, "request_schema", "collection"),
    ({"entity": "e1", "collection": "main'; DROP TABLE x;--"}, "request_schema", "collection"),
    ({"entity": "e1", "dry_run": "true"}, "request_schema", "dry_run"),
    ({"entity": "e1", "dry_run": 1}, "request_schema", "dry_run"),
    ([{"entity": "e1"}], "request_schema", ""),
    ("e1", "request_schema", ""),
])
def test_a_bad_erase_body_is_422_with_its_path_and_erases_nothing(catalog, api, body, code, path):
    record_make(catalog, entity="e1", text="stays")
    response = _erase(api, body)
    check(response, "POST", "/erase", 422)
    assert response.json()["error"] == code and response.json().get("path", "") == path
    assert Record.objects.count() == 1 and not ErasureAudit.objects.exists()


def test_a_malformed_json_body_is_rejected_before_anything_is_erased(catalog, api):
    record_make(catalog, entity="e1", text="stays")
    response = api.generic("POST", "/erase", '{"entity": "e1",', content_type="application/json")
    assert response.status_code in (400, 422) and Record.objects.count() == 1
    response = api.generic("POST", "/erase", '{"entity": "e1", "entity": "e2"}', content_type="application/json")
    assert response.status_code == 422 and Record.objects.count() == 1


@pytest.mark.parametrize("entity", ["a\x00b", "\ud800", "e1\n" * 100])
def test_hostile_entities_are_refused_or_erase_nothing_else(catalog, api, entity):
    kept = record_make(catalog, entity="e1", text="stays")
    response = api.generic("POST", "/erase", json.dumps({"entity": entity}), content_type="application/json")
    assert response.status_code in (200, 422), response.content
    if response.status_code == 200:
        assert response.json()["counts"]["records"] == 0
    assert Record.objects.filter(pk=kept.pk).exists()


def _every_table() -> dict[str, str]:
    """Every base table's rows, as one digest per table."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
                       "AND table_type = 'BASE TABLE' ORDER BY 1")
        tables = [row[0] for row in cursor.fetchall()]
        digests = {}
        for table in tables:
            cursor.execute(f'SELECT count(*), md5(coalesce(string_agg(t::text, \',\' ORDER BY t::text), \'\')) '
                           f'FROM "{table}" t')
            digests[table] = "%s:%s" % cursor.fetchone()
    return digests


def test_a_dry_run_erasure_leaves_every_table_as_it_was(catalog, api):
    fact = record_make(catalog, entity="e1", key="k", type="fact", text="one")
    record_make(catalog, entity="e1", text="two", derived_from=[fact.pk])
    record_make(catalog, entity="e2", text="three")
    before = _every_table()
    assert "catalog_app_record" in before and "catalog_app_lexical_document" in before
    assert _erase(api, {"entity": "e1", "dry_run": True}).json()["counts"]["records"] == 2
    assert _delete(api, fact.pk, "?dry_run=true").json()["counts"]["records"] == 2
    assert _every_table() == before
