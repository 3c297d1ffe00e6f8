"""GET /export and POST /import over real PostgreSQL, the lexical index and the real MiniLM
model: a seeded workspace imported into a fresh one answers every search mode, the brief and
every lookup identically; a second import changes nothing; an interrupted export resumes from
its cursor (docs/export-import.md)."""
from __future__ import annotations

import json

import pytest

from catalog_app.lexical.check import lexical_check
from catalog_app.models import Definition, Record, RecordEmbedding, Workspace
from catalog_app.services.workspace_import import import_record_id
from catalog_app.services.workspaces import workspace_create
from tests.catalog_app.transfer_support import (MARIA, answers, client_for, differences, export_text, import_text,
                                                lexical_statistics, mapped, parents_unordered, seed)

pytestmark = pytest.mark.model


@pytest.fixture
def seeded(catalog):
    return seed(catalog)


@pytest.fixture
def fresh():
    workspace, key = workspace_create(name="fresh")
    return workspace, client_for(key)


def counts(workspace) -> tuple[int, int, int, int]:
    return (Record.objects.filter(workspace=workspace).count(),
            RecordEmbedding.objects.filter(workspace=workspace).count(),
            Definition.objects.filter(workspace=workspace).count(),
            Workspace.objects.get(pk=workspace.pk).catalog_revision)


def hang_up(response) -> None:
    """Close a streaming response mid-way, as a client that disconnects makes the server do: the
    server's generator is closed. Django's test client wraps the stream in a generator that keeps
    the test's database connection open when it closes; closing that wrapper is the hang-up."""
    response._iterator.close()


def lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def test_the_export_is_header_definitions_records_in_seq_order_and_end(api, catalog, seeded):
    exported = lines(export_text(api))
    kinds = [line["kind"] for line in exported]
    assert kinds[0] == "header" and kinds[-1] == "end"
    assert kinds == ["header", *["definition"] * kinds.count("definition"), *["record"] * kinds.count("record"),
                     "end"]
    records = [line for line in exported if line["kind"] == "record"]
    assert len(records) == Record.objects.filter(workspace=catalog).count() == exported[0]["records"] == 12
    assert [line["seq"] for line in records] == list(range(1, 13))
    by_id = {line["id"]: line for line in records}
    assert by_id[seeded["withdrawn"]]["tombstone"] is True and by_id[seeded["lisbon"]]["key"] == "offsite"
    assert by_id[seeded["note"]]["derived_from"] and by_id[seeded["note"]]["dedupe_key"] == "note-porto"
    assert by_id[seeded["pending"]]["enriched_at"] is None and by_id[seeded["pending"]]["vectors"] == []
    (vector,) = by_id[seeded["turn0"]]["vectors"]
    assert vector["space"] == exported[0]["embedding"]["space"] and len(vector["vector"]) == 384


def test_an_entity_export_holds_its_records_and_the_whole_catalog(api, catalog, seeded):
    exported = lines(export_text(api, entity="contact.bo"))
    assert [line["entity"] for line in exported if line["kind"] == "record"] == ["contact.bo"]
    assert sum(line["kind"] == "definition" for line in exported) == Definition.objects.filter(
        workspace=catalog).count()
    assert exported[0]["records"] == exported[-1]["records"] == 1


@pytest.mark.parametrize("cut", [1, 3, 9, 17])
def test_an_interrupted_export_resumes_from_its_cursor_to_the_same_text(api, catalog, seeded, cut):
    full = export_text(api)
    response = api.get("/export")
    kept = []
    for chunk in response.streaming_content:  # the download stops after ``cut`` lines
        kept += chunk.decode("utf-8").splitlines(keepends=True)
        if len(kept) >= cut:
            break
    hang_up(response)
    kept = kept[:cut]
    cursor = json.loads(kept[-1]).get("cursor")
    rest = export_text(api, cursor=cursor) if cursor else export_text(api)[len(kept[0]):]
    assert "".join(kept) + rest == full


def test_a_fresh_workspace_answers_like_the_source_with_remapped_ids(api, catalog, seeded, fresh):
    target, target_api = fresh
    before = answers(api, seeded)
    source_statistics = lexical_statistics(catalog.pk)
    result = import_text(target_api, export_text(api), ids="remap")
    assert result == {"definitions_added": Definition.objects.filter(workspace=catalog).count(),
                      "definitions_unchanged": 0, "records_added": 12, "records_unchanged": 0,
                      "vectors_added": RecordEmbedding.objects.filter(workspace=catalog).count()}
    mapping = {source: str(import_record_id(target.pk, source_id, "remap"))
               for source_id in Record.objects.filter(workspace=catalog).values_list("id", flat=True)
               for source in [str(source_id)]}
    assert set(mapping.values()) == {str(pk) for pk in Record.objects.filter(workspace=target).values_list("id",
                                                                                                          flat=True)}
    after = answers(target_api, {name: mapping[value] for name, value in seeded.items()})
    found = differences(parents_unordered(after), parents_unordered(mapped(before, mapping)))
    assert not found, "\n".join(found)
    assert lexical_statistics(target.pk) == source_statistics
    assert lexical_check(workspace_id=target.pk) == []
    assert Workspace.objects.get(pk=target.pk).settings == Workspace.objects.get(pk=catalog.pk).settings != {}


def test_a_second_import_changes_nothing(api, catalog, seeded, fresh):
    target, target_api = fresh
    exported = export_text(api)
    import_text(target_api, exported, ids="remap")
    first = (counts(target), answers(target_api, {name: str(import_record_id(target.pk, __import__("uuid").UUID(v),
                                                                              "remap"))
                                                  for name, v in seeded.items()}), lexical_statistics(target.pk))
    again = import_text(target_api, exported, ids="remap")
    assert again == {"definitions_added": 0, "definitions_unchanged": first[0][2], "records_added": 0,
                     "records_unchanged": 12, "vectors_added": 0}
    second = (counts(target), answers(target_api, {name: str(import_record_id(target.pk, __import__("uuid").UUID(v),
                                                                               "remap"))
                                                   for name, v in seeded.items()}), lexical_statistics(target.pk))
    assert second == first


def test_preserved_ids_and_seqs_answer_exactly_like_the_source_once_it_is_gone(api, catalog, seeded, fresh):
    """Another server holds none of the source's ids; deleting the source workspace here stands in
    for it, so every answer must be byte for byte the source's (ids, seqs, scores, order)."""
    target, target_api = fresh
    before = answers(api, seeded)
    statistics = lexical_statistics(catalog.pk)
    exported = export_text(api)
    Workspace.objects.filter(pk=catalog.pk).delete()
    import_text(target_api, exported)
    assert answers(target_api, seeded) == before
    assert lexical_statistics(target.pk) == statistics
    stored = {str(pk): seq for pk, seq in Record.objects.filter(workspace=target).values_list("id", "workspace_seq")}
    assert stored == {line["id"]: line["seq"] for line in lines(exported) if line["kind"] == "record"}


def test_preserved_seqs_keep_their_gaps_and_renumbered_ones_close_them(api, catalog, seeded, fresh):
    target, target_api = fresh
    exported = [line for line in lines(export_text(api)) if line.get("entity", MARIA) != "contact.bo"]
    gap = "\n".join(json.dumps(line) for line in exported) + "\n"
    import_text(target_api, gap, ids="remap")
    assert sorted(Record.objects.filter(workspace=target).values_list("workspace_seq", flat=True)) == [
        line["seq"] for line in exported if line["kind"] == "record"]
    other, other_key = workspace_create(name="renumbered")
    import_text(client_for(other_key), gap, ids="remap", seqs="renumber")
    assert sorted(Record.objects.filter(workspace=other).values_list("workspace_seq", flat=True)) == list(range(1, 12))
