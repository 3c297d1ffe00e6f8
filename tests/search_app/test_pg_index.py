"""``search_app.backends.pg_index``: the lexical channels read the term index when a source's
scope is an ``IndexScope`` and the exact scan (``pg_bm25.scan_candidates``, kept here as the
oracle) otherwise; both give the same candidates and statistics, for both analyzers.

A property test (Hypothesis) writes random corpora (two collections, a pinned older version,
entities, types, keyed facts restated and withdrawn, drafts, records not ready yet) into a fresh
workspace per example, beside another workspace holding the same texts, and compares the index
path with the scan for random scopes, queries and caps."""
from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from catalog_app.catalog.runtime import catalog_for_workspace
from catalog_app.services.workspaces import workspace_create
from search_app.backends import pg_index
from search_app.backends.pg_bm25 import BM25_V1, ENGLISH, scan_candidates
from search_app.engine.resolve import resolve_search
from search_app.services import search_spec_parse
from tests.catalog_app.lexical_support import load_lexical_catalog, write

WORDS = ("budget", "budgets", "review", "reviewed", "the", "plan", "finance", "lake", "trail", "offsite")
_numbers = itertools.count()


def resolved_source(workspace, q: str, scope: dict, where: dict | None = None):
    body = {"q": q, "mode": "text", "scope": scope, "k": 5}
    if where:
        body["where"] = where
    (resolved,) = resolve_search(search_spec_parse(body), catalog_for_workspace(workspace))
    return resolved


def both_paths(workspace, q: str, scope: dict, cap: int, analyzer: str):
    """(index path, scan path) of ``analyzer``'s channel for ``q`` under ``scope``."""
    resolved = resolved_source(workspace, q, scope)
    index_scope = pg_index.index_scope(resolved)
    assert index_scope is not None
    terms = pg_index.english_terms(q) if analyzer == ENGLISH else tuple(dict.fromkeys(q.lower().split()))
    if not terms:  # no term: no statistics and no candidate, before either path is asked
        return (pg_index.lexical_candidates(resolved, workspace.pk, analyzer, terms, cap),
                scan_candidates(resolved, workspace.pk, analyzer, terms, cap))
    return (pg_index.index_candidates(index_scope, workspace.pk, analyzer, terms, cap),
            scan_candidates(resolved, workspace.pk, analyzer, terms, cap))


def assert_same(index_answer, scan_answer):
    (index_stats, index_ids), (scan_stats, scan_ids) = index_answer, scan_answer
    assert index_ids == scan_ids
    assert (index_stats.terms, index_stats.n) == (scan_stats.terms, scan_stats.n)
    assert index_stats.average_length == pytest.approx(scan_stats.average_length, rel=1e-12)
    assert index_stats.idf == pytest.approx(scan_stats.idf, abs=1e-9)


records = st.lists(st.fixed_dictionaries({
    "words": st.lists(st.sampled_from(WORDS), min_size=1, max_size=6),
    "collection": st.sampled_from([("notes", 1), ("notes", 2), ("logs", 1), ("slow", 1)]),
    "entity": st.sampled_from(["e1", "e2"]),
    "type": st.sampled_from(["note", "call"]),
    "key": st.sampled_from([None, None, "plan", "city"]),
    "status": st.sampled_from(["active", "active", "draft"]),
    "tombstone": st.booleans(),
}), min_size=3, max_size=16)
scopes = st.fixed_dictionaries({}, optional={
    "collections": st.sampled_from([["notes"], ["logs"], ["notes", "logs", "slow"]]),
    "entities": st.sampled_from([["e1"], ["e2"], ["e1", "e2"]]),
    "types": st.sampled_from([["note"], ["call"]]),
    "status": st.sampled_from(["active", "draft", "all"]),
    "keyed": st.booleans(),
})


@pytest.mark.django_db
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(corpus=records, scope=scopes, query=st.lists(st.sampled_from(WORDS + ("absent",)), min_size=1, max_size=4),
       cap=st.integers(min_value=1, max_value=12), pinned=st.booleans())
def test_the_index_path_equals_the_scan_on_random_corpora(tmp_path_factory, corpus, scope, query, cap, pinned):
    workspace, other = (workspace_create(name=f"prop-{next(_numbers)}")[0] for _ in range(2))
    for owner in (workspace, other):
        load_lexical_catalog(owner, tmp_path_factory.mktemp("catalog"))
    for entry in corpus:
        collection, version = entry["collection"]
        item = {"text": " ".join(entry["words"]), "collection": collection, "collection_version": version,
                "entity": entry["entity"], "type": entry["type"], "status": entry["status"]}
        if entry["key"] is not None:
            item["key"] = entry["key"]
        write(other, item)
        (written,) = write(workspace, item)
        if entry["tombstone"] and entry["key"] is not None:
            withdrawal = {key: value for key, value in item.items() if key != "text"}
            write(workspace, {**withdrawal, "tombstone": True, "derived_from": [str(written)]})
    scope = {"collections": ["notes", "logs", "slow"], **scope}
    if pinned and "notes" in scope["collections"]:
        scope["collection_versions"] = {"notes": [1]}
    q = " ".join(query)
    for analyzer in (BM25_V1, ENGLISH):
        assert_same(*both_paths(workspace, q, scope, cap, analyzer))


@pytest.mark.parametrize(("scope", "where"), [
    ({"versions": "all"}, None),
    ({"occurred_after": "2026-01-01T00:00:00Z"}, None),
    ({"occurred_before": "2026-01-01T00:00:00Z"}, None),
    ({"depth_lte": 0}, None),
    ({}, {"speaker": {"eq": "ana"}}),
], ids=["history", "after", "before", "depth", "typed_filter"])
def test_sources_the_index_cannot_answer_keep_the_scan(catalog, scope, where):
    resolved = resolved_source(catalog, "budget", {"collections": ["main"], **scope}, where)
    assert pg_index.index_scope(resolved) is None


def test_an_index_scope_says_exactly_what_the_source_admits(catalog):
    resolved = resolved_source(catalog, "budget", {"collections": ["main", "profiles"], "entities": ["user-1"],
                                                   "types": ["note"], "status": "all", "keyed": False})
    scope = pg_index.index_scope(resolved)
    assert (scope.collection_ids, scope.statuses, scope.types, scope.keyed, scope.entities) == (
        ("main", "profiles"), ("active", "draft"), ("note",), False, ("user-1",))
    assert scope.versions == (("main", 1), ("profiles", 1))


def test_english_terms_are_the_stored_lexemes_of_the_query(db):
    assert pg_index.english_terms("The budgets were REVIEWED, twice") == ("budget", "review", "twice")
    assert pg_index.english_terms("the and of") == ()
    assert pg_index.english_terms(None) == ()


def test_an_analyzer_the_write_path_does_not_maintain_is_scanned(workspace, tmp_path, settings):
    load_lexical_catalog(workspace, tmp_path / "catalog")
    best, other = write(workspace, {"text": "budgets reviewed, budget review"}, {"text": "a budget"})
    resolved = resolved_source(workspace, "budget review", {"collections": ["notes"]})
    settings.MEMSEEK = {"LEXICAL_ANALYZERS": "bm25_v1"}
    stats, ids = pg_index.lexical_candidates(resolved, workspace.pk, ENGLISH, ("budget", "review"), 5)
    assert ids == [best, other] and stats.n == 2
    assert pg_index.text_candidates(resolved, workspace.pk, "budget review", 5) == ids
