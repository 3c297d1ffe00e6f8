"""The SQL scan of ``POST /search/lexical`` equals the Python oracle (``lexical_oracle``) on
random corpora (events and keyed lanes with supersessions, tombstones, drafts, rows not ready,
several collections, entities, types and tags), scopes, filters, budgets and cursors: the same
coverage figures, the same statistics and a correct top ``limit``. The index path gives the
scan's page, hit for hit, whenever it answers, and answers every cursorless request whose
budgets cover the source and whose corpus it expresses."""
import uuid

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catalog_app.catalog.runtime import catalog_for_workspace
from retrieval_app.lexical.corpus import lexical_corpus
from retrieval_app.lexical.indexed import indexed_page
from retrieval_app.lexical.request import LexicalRequestError, parse_lexical_request
from retrieval_app.lexical.scan import lexical_scan

from .lexical_factories import load_lexical_catalog, note, write
from .lexical_oracle import assert_top_k, oracle_page

WORDS = ["alpha", "beta", "gamma", "delta", "zx17"]


@st.composite
def corpora(draw):
    """Batches of records written in order (so later keyed rows supersede earlier ones)."""
    items = []
    for _ in range(draw(st.integers(1, 14))):
        text = " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6)))
        collection = draw(st.sampled_from(["notes", "notes", "logs", "pending"]))
        item = note(text, entity=draw(st.sampled_from(["a", "b"])), collection=collection,
                    type=draw(st.sampled_from(["note", "memo"])))
        if collection == "notes":
            if draw(st.booleans()):
                item["content"] = {"tags": draw(st.lists(st.sampled_from(["red", "blue"]), max_size=2, unique=True))}
            if draw(st.booleans()):
                item["key"] = draw(st.sampled_from(["k1", "k2"]))
                item["status"] = draw(st.sampled_from(["active", "active", "draft"]))
        items.append(item)
    tombstones = draw(st.lists(st.integers(0, len(items) - 1), max_size=2, unique=True))
    return items, tombstones


@st.composite
def requests(draw):
    scope = {}
    if draw(st.booleans()):
        scope["collections"] = draw(st.lists(st.sampled_from(["notes", "logs", "pending"]), min_size=1, unique=True))
    if draw(st.booleans()):
        scope["entities"] = draw(st.lists(st.sampled_from(["a", "b"]), min_size=1, unique=True))
    if draw(st.booleans()):
        scope["types"] = draw(st.lists(st.sampled_from(["note", "memo"]), min_size=1, unique=True))
    scope["status"] = draw(st.sampled_from(["active", "draft", "all"]))
    scope["keyed"] = draw(st.sampled_from([True, False, "any"]))
    scope["versions"] = draw(st.sampled_from(["current", "all"]))
    query = {"text": " ".join(draw(st.lists(st.sampled_from(WORDS + ["?"]), min_size=1, max_size=3))) + " x",
             "limit": draw(st.integers(1, 5)), "scan_limit": draw(st.integers(1, 16)),
             "scan_bytes_limit": draw(st.sampled_from([60, 120, 200, 400, 10_000]))}
    if draw(st.booleans()):
        query["type"] = draw(st.sampled_from(["note", "memo"]))
    if draw(st.booleans()) and scope.get("collections", ["notes"]) and "notes" in scope.get("collections", ["notes"]):
        query["tag"] = draw(st.sampled_from(["red", "blue"]))
    return scope, query, draw(st.one_of(st.none(), st.integers(0, 20), st.uuids()))


@pytest.fixture
def ws(workspace, tmp_path):
    return load_lexical_catalog(workspace, tmp_path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(corpus=corpora(), request=requests())
def test_the_scan_equals_the_oracle(ws, corpus, request):
    items, tombstones = corpus
    scope, query, cursor = request
    with transaction.atomic():
        ids = write_all(ws, items, tombstones)
        if isinstance(cursor, int):
            cursor = str(sorted(map(uuid.UUID, ids))[cursor % len(ids)])
        elif cursor is not None:
            cursor = str(cursor)
        body = {"contract_version": 1, "mode": "lexical", "scope": scope, "query": {**query, "after": cursor}}
        parsed = parse_lexical_request(body)
        compiled = lexical_corpus(workspace_id=ws.pk, request=parsed, catalog=catalog_for_workspace(ws))
        expected = oracle_page(
            workspace=ws, collections=scope.get("collections", ["logs", "notes", "pending"]), text=query["text"],
            after=parsed.after, scan_limit=parsed.scan_limit, scan_bytes_limit=parsed.scan_bytes_limit,
            entities=scope.get("entities"), types=scope.get("types"), status=scope["status"],
            keyed=None if scope["keyed"] == "any" else scope["keyed"], versions=scope["versions"],
            record_type=query.get("type"), tag=query.get("tag"))
        try:
            page = lexical_scan(compiled, parsed)
        except LexicalRequestError as error:
            assert error.code == "lexical_scan_budget" and expected.budget_too_small
        else:
            assert not expected.budget_too_small
            assert (page.matched, page.corpus, page.scanned, page.scanned_bytes, page.exhaustive, page.next_after) == \
                (expected.matched, expected.corpus, expected.scanned, expected.scanned_bytes, expected.exhaustive,
                 expected.next_after)
            assert_top_k(page.hits, expected, parsed.limit)
        transaction.set_rollback(True)


def write_all(ws, items, tombstones) -> list[str]:
    """Write ``items`` one by one (each a later ``seq``), then a tombstone for each keyed item
    listed in ``tombstones``; returns every id written."""
    ids = [write(ws, [item])[0] for item in items]
    for index in tombstones:
        item = items[index]
        if item.get("key") is not None:
            ids += write(ws, [{"entity": item["entity"], "collection": "notes", "type": item["type"],
                               "key": item["key"], "status": item.get("status", "active"), "tombstone": True,
                               "derived_from": [ids[index]]}])
    return ids


@st.composite
def cursorless_requests(draw):
    """Requests the index can answer (and some it cannot: a budget short of the source, every
    version of a lane, pinned versions)."""
    scope, query, _ = draw(requests())
    scope["versions"] = draw(st.sampled_from(["current", "current", "current", "all"]))
    if draw(st.booleans()):
        scope.setdefault("collections", ["notes"])
        if "notes" in scope["collections"]:
            scope["collection_versions"] = {"notes": [1]}
    query.pop("tag", None)
    query["scan_limit"] = draw(st.sampled_from([3, 10_000, 10_000]))
    query["scan_bytes_limit"] = draw(st.sampled_from([400, 8_388_608, 8_388_608]))
    return scope, query


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(corpus=corpora(), request=cursorless_requests())
def test_the_index_path_gives_the_scans_page(ws, corpus, request):
    items, tombstones = corpus
    scope, query = request
    with transaction.atomic():
        write_all(ws, items, tombstones)
        parsed = parse_lexical_request({"contract_version": 1, "mode": "lexical", "scope": scope, "query": query})
        compiled = lexical_corpus(workspace_id=ws.pk, request=parsed, catalog=catalog_for_workspace(ws))
        indexed = indexed_page(compiled, parsed)
        try:
            scanned = lexical_scan(compiled, parsed)
        except LexicalRequestError:
            assert indexed is None  # a budget short of the first row is never the index's to answer
        else:
            if indexed is not None:
                assert [record_id for record_id, _ in indexed.hits] == [record_id for record_id, _ in scanned.hits]
                assert [score for _, score in indexed.hits] == \
                    pytest.approx([score for _, score in scanned.hits], rel=1e-9, abs=1e-12)
                assert (indexed.matched, indexed.corpus, indexed.scanned, indexed.scanned_bytes, indexed.exhaustive,
                        indexed.next_after, indexed.dfs) == \
                    (scanned.matched, scanned.corpus, scanned.scanned, scanned.scanned_bytes, scanned.exhaustive,
                     scanned.next_after, scanned.dfs)
                assert indexed.average_length == pytest.approx(scanned.average_length, rel=1e-12)
            else:
                covered = scanned.exhaustive
                assert not covered or compiled.index_scope is None
        transaction.set_rollback(True)
