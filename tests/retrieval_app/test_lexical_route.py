"""``POST /search/lexical``: the page's formula worked by hand, the response shape, tie order,
filters, and another workspace that never shows up nor moves a figure."""
import math
import uuid

import pytest

from catalog_app.services.record_ingest import record_ingest_batch
from catalog_app.services.workspaces import workspace_create

from .lexical_factories import body, lexical, load_lexical_catalog, note, write


@pytest.fixture
def ws(workspace, tmp_path):
    return load_lexical_catalog(workspace, tmp_path)


def test_three_documents_score_as_the_page_formula_worked_by_hand(api, ws):
    retry_twice, retry_once, _ = write(ws, [note("retry failure retry"), note("retry ok"), note("nothing here at all")])
    page = lexical(api, body("Retry FAILURE retry"))["page"]
    # N = 3, lengths 3, 2, 4: average 3. df(retry) = 2, df(failure) = 1.
    idf_retry = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))  # ln 1.6
    idf_failure = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))  # ln 8/3
    # Document 1: length 3 = average, so the length norm is 0.25 + 0.75 = 1.
    first = idf_retry * 2 * 2.2 / (2 + 1.2 * 1) + idf_failure * 1 * 2.2 / (1 + 1.2 * 1)
    # Document 2: length 2, norm 0.25 + 0.75 * 2 / 3 = 0.75.
    second = idf_retry * 1 * 2.2 / (1 + 1.2 * 0.75)
    assert first == pytest.approx(1.6270842432246126, rel=1e-15)
    assert [hit["record"]["id"] for hit in page["hits"]] == [retry_twice, retry_once]
    assert [hit["score"] for hit in page["hits"]] == pytest.approx([first, second], rel=1e-12)
    assert (page["matched_records"], page["corpus_records"], page["scanned_records"]) == (2, 3, 3)


def test_the_response_has_the_page_shape(api, ws):
    (record_id,) = write(ws, [note("ZX17 retry failure", tags=["ops"])])
    payload = lexical(api, body("zx17", {"collections": ["notes"]}))
    assert list(payload) == ["contract_version", "scope", "mode", "ranking_version", "page", "timing"]
    assert (payload["contract_version"], payload["mode"], payload["ranking_version"]) == (1, "lexical", "bm25_v1")
    assert payload["scope"] == {"collections": ["notes"], "entities": None, "types": None, "status": "active",
                                "keyed": "any", "versions": "current"}
    assert list(payload["page"]) == ["hits", "matched_records", "corpus_records", "scanned_records", "scanned_bytes",
                                     "exhaustive", "next_after"]
    record = payload["page"]["hits"][0]["record"]
    assert record == api.get(f"/records/{record_id}").json() | {"last_accessed": record["last_accessed"]}
    assert isinstance(payload["timing"]["retrieval_micros"], int) and payload["timing"]["retrieval_micros"] >= 0


def test_equal_scores_are_ordered_by_ascending_record_uuid(api, ws):
    ids = write(ws, [note("same words here") for _ in range(6)] + [note("other")])
    hits = lexical(api, body("words"))["page"]["hits"]
    assert [hit["record"]["id"] for hit in hits] == sorted(ids[:6], key=uuid.UUID)
    assert len({hit["score"] for hit in hits}) == 1 and hits[0]["score"] > 0


def test_limit_cuts_the_hits_but_not_the_matched_count(api, ws):
    write(ws, [note(f"alpha {'beta ' * i}") for i in range(5)])
    page = lexical(api, body("alpha", limit=2))["page"]
    assert len(page["hits"]) == 2 and page["matched_records"] == 5


def test_type_and_tag_filter_the_corpus_and_its_statistics(api, ws):
    write(ws, [note("alpha one", tags=["red"]), note("alpha two", tags=["blue"]), note("alpha three", type="memo"),
               note("alpha four", collection="logs")])
    by_type = lexical(api, body("alpha", type="memo"))["page"]
    assert (by_type["corpus_records"], by_type["matched_records"], by_type["scanned_records"]) == (1, 1, 4)
    by_tag = lexical(api, body("alpha", tag="red"))["page"]
    assert [hit["record"]["content"]["tags"] for hit in by_tag["hits"]] == [["red"]]
    assert (by_tag["corpus_records"], by_tag["scanned_records"]) == (1, 4)
    # idf over the one-record corpus: ln(1 + 0.5 / 1.5)
    assert by_tag["hits"][0]["score"] == pytest.approx(math.log(1 + 0.5 / 1.5) * 2.2 / (1 + 1.2), rel=1e-12)


def test_a_tag_no_collection_in_scope_declares_is_refused_at_its_path(api, ws):
    payload = lexical(api, body("alpha", {"collections": ["logs"]}, tag="red"), status=400)
    assert (payload["error"], payload["path"]) == ("lexical_request", "query.tag")


def test_scope_narrows_corpus_but_source_is_its_collections(api, ws):
    write(ws, [note("alpha", entity="a"), note("alpha", entity="b"), note("alpha", collection="logs")])
    page = lexical(api, body("alpha", {"collections": ["notes"], "entities": ["a"]}))["page"]
    assert (page["matched_records"], page["corpus_records"], page["scanned_records"]) == (1, 1, 2)


@pytest.mark.parametrize("scope", [{}, {"versions": "all"}, {"status": "all"}], ids=["index", "scan", "both-lanes"])
def test_another_workspace_never_appears_nor_changes_a_figure(api, ws, tmp_path, scope):
    write(ws, [note("retry failure retry"), note("retry ok"), note("nothing here at all")])
    before = lexical(api, body("retry failure", scope))
    other, _ = workspace_create(name="other-co")
    load_lexical_catalog(other, tmp_path)
    record_ingest_batch(workspace=other, items=[note("retry retry retry failure") for _ in range(20)])
    after = lexical(api, body("retry failure", scope))
    assert after["page"]["scanned_records"] == 3
    assert after["page"] | {"hits": None} == before["page"] | {"hits": None}
    assert [(h["record"]["id"], h["score"]) for h in after["page"]["hits"]] == \
        [(h["record"]["id"], h["score"]) for h in before["page"]["hits"]]


def test_another_workspaces_cursor_is_only_a_position(api, ws, tmp_path):
    other, _ = workspace_create(name="other-co")
    load_lexical_catalog(other, tmp_path)
    (foreign,) = write(other, [note("alpha")])
    mine = write(ws, [note("alpha") for _ in range(3)])
    page = lexical(api, body("alpha", after=foreign))["page"]
    assert {hit["record"]["id"] for hit in page["hits"]} == {i for i in mine if uuid.UUID(i) > uuid.UUID(foreign)}
    assert foreign not in {hit["record"]["id"] for hit in page["hits"]}
