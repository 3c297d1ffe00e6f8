"""Scan budgets, the source-row cursor, ``exhaustive`` and ``next_after`` (lexical-search.md),
and which source rows count as scanned but never as corpus: tombstones, superseded values,
drafts, not-ready rows and rows outside the filters."""
import uuid

import pytest
from django.db import connection

from catalog_app.record_sql import RECORD, source_bytes

from .lexical_factories import body, lexical, load_lexical_catalog, note, write


@pytest.fixture
def ws(workspace, tmp_path):
    return load_lexical_catalog(workspace, tmp_path)


def _sizes(ids: list[str]) -> dict[str, int]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT r.id, {source_bytes('r')} FROM {RECORD} r WHERE r.id = ANY(%s)",
                       [[uuid.UUID(i) for i in ids]])
        return {str(row[0]): row[1] for row in cursor.fetchall()}


@pytest.fixture
def five(ws):
    """Five matching notes of different sizes, as (ids in UUID order, {id: source bytes})."""
    ids = sorted(write(ws, [note("alpha " + "word " * i) for i in range(5)]), key=uuid.UUID)
    return ids, _sizes(ids)


def _page(api, **query) -> dict:
    return lexical(api, body("alpha", **query))["page"]


def test_budgets_covering_the_scope_scan_it_all(api, five):
    ids, sizes = five
    page = _page(api)
    assert (page["scanned_records"], page["scanned_bytes"], page["exhaustive"], page["next_after"]) == \
        (5, sum(sizes.values()), True, None)


@pytest.mark.parametrize("scan_limit,scanned,next_index,exhaustive", [
    (1, 1, 0, False), (2, 2, 1, False), (4, 4, 3, False), (5, 5, None, True), (6, 5, None, True)])
def test_the_row_budget_admits_that_many_rows_in_uuid_order(api, five, scan_limit, scanned, next_index, exhaustive):
    ids, sizes = five
    page = _page(api, scan_limit=scan_limit)
    assert page["scanned_records"] == scanned == page["corpus_records"] == page["matched_records"]
    assert page["scanned_bytes"] == sum(sizes[i] for i in ids[:scanned])
    assert page["next_after"] == (ids[next_index] if next_index is not None else None)
    assert page["exhaustive"] is exhaustive
    assert {hit["record"]["id"] for hit in page["hits"]} == set(ids[:scanned])


@pytest.mark.parametrize("rows,slack,scanned", [(1, 0, 1), (2, 0, 2), (2, -1, 1), (2, 1, 2), (5, 0, 5)])
def test_the_byte_budget_admits_rows_while_their_bytes_fit(api, five, rows, slack, scanned):
    ids, sizes = five
    budget = sum(sizes[i] for i in ids[:rows]) + slack
    page = _page(api, scan_bytes_limit=budget)
    assert page["scanned_records"] == scanned
    assert page["scanned_bytes"] == sum(sizes[i] for i in ids[:scanned]) <= budget
    # The lookahead row is read but neither admitted nor counted.
    assert page["next_after"] == (ids[scanned - 1] if scanned < 5 else None)
    assert page["exhaustive"] is (scanned == 5)


def test_a_byte_budget_that_cannot_fit_the_first_row_is_400(api, five):
    ids, sizes = five
    payload = lexical(api, body("alpha", scan_bytes_limit=sizes[ids[0]] - 1), status=400)
    assert (payload["error"], payload["path"]) == ("lexical_scan_budget", "query.scan_bytes_limit")
    after = lexical(api, body("alpha", scan_bytes_limit=sizes[ids[2]] - 1, after=ids[1]), status=400)
    assert after["error"] == "lexical_scan_budget"


def test_continued_pages_cover_every_row_once_and_are_never_exhaustive(api, five):
    ids, sizes = five
    seen, after, pages = [], None, []
    while True:
        page = _page(api, scan_limit=2, **({"after": after} if after else {}))
        pages.append(page)
        seen.extend(hit["record"]["id"] for hit in page["hits"])
        after = page["next_after"]
        if after is None:
            break
    assert [p["scanned_records"] for p in pages] == [2, 2, 1]
    assert [p["next_after"] for p in pages] == [ids[1], ids[3], None]
    assert [p["exhaustive"] for p in pages] == [False, False, False]
    assert sorted(seen, key=uuid.UUID) == ids and len(seen) == len(set(seen))
    assert sum(p["scanned_bytes"] for p in pages) == sum(sizes.values())


def test_a_cursor_past_the_last_row_scans_nothing(api, five):
    ids, _ = five
    page = _page(api, after=ids[-1])
    assert page == {"hits": [], "matched_records": 0, "corpus_records": 0, "scanned_records": 0,
                    "scanned_bytes": 0, "exhaustive": False, "next_after": None}
    cursorless_empty = lexical(api, body("alpha", {"collections": ["logs"]}))["page"]
    assert (cursorless_empty["scanned_records"], cursorless_empty["exhaustive"]) == (0, True)


def test_statistics_come_from_the_scanned_corpus_only(api, five):
    ids, _ = five
    whole = {hit["record"]["id"]: hit["score"] for hit in _page(api)["hits"]}
    first_two = {hit["record"]["id"]: hit["score"] for hit in _page(api, scan_limit=2)["hits"]}
    # Another N and average length: the same records score differently.
    assert set(first_two) == set(ids[:2])
    assert any(first_two[i] != pytest.approx(whole[i], rel=1e-9) for i in ids[:2])


def test_invisible_source_rows_are_scanned_but_never_corpus(api, ws):
    old, = write(ws, [note("alpha old value", key="k1")])
    new, = write(ws, [note("alpha new value", key="k1")])
    gone, = write(ws, [note("alpha retracted", key="k2")])
    tomb, = write(ws, [{"entity": "ops", "collection": "notes", "type": "note", "key": "k2", "tombstone": True,
                        "derived_from": [gone]}])
    draft, = write(ws, [note("alpha draft", key="k3", status="draft")])
    unready, = write(ws, [note("alpha waiting", collection="pending")])
    event, = write(ws, [note("alpha event")])
    everything = {"collections": ["notes", "pending"]}
    page = lexical(api, body("alpha", everything))["page"]
    assert {hit["record"]["id"] for hit in page["hits"]} == {new, event}
    assert (page["scanned_records"], page["corpus_records"], page["matched_records"]) == (7, 2, 2)
    drafts = lexical(api, body("alpha", everything | {"status": "draft"}))["page"]
    assert [hit["record"]["id"] for hit in drafts["hits"]] == [draft]
    both = lexical(api, body("alpha", everything | {"status": "all", "versions": "all"}))["page"]
    # Every version of a lane, both statuses; a tombstone and a not-ready row are never visible.
    assert {hit["record"]["id"] for hit in both["hits"]} == {old, new, gone, draft, event}
    assert both["scanned_records"] == 7 and tomb not in {hit["record"]["id"] for hit in both["hits"]}
    assert unready not in {hit["record"]["id"] for hit in both["hits"]}
