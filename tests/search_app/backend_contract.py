"""The contract every candidate backend passes (``search_app.backends.CandidateBackend``), in the
manner of Wagtail's search backend tests: a subclass names its backend in ``backend`` and runs
every test here. The oracle is plain Python over the stored rows: the scope (workspace, live,
collections, entities, types, status, current in lane), recency order and the reloaded signals.
"""
from __future__ import annotations

import uuid
from functools import partial
from types import SimpleNamespace

import pytest

from catalog_app.catalog.runtime import catalog_for_workspace
from catalog_app.models import Record
from catalog_app.record_sql import Clause
from catalog_app.services.catalog_load import catalog_load
from catalog_app.services.workspaces import workspace_create
from search_app.engine.candidates import QueryContext
from search_app.engine.profiles import BACKEND_CAPABILITIES
from search_app.engine.resolve import resolve_search
from search_app.engine.trace import SEARCH_STAGES
from search_app.services import search_spec_parse
from tests.conftest import EXAMPLE_CATALOG
from tests.search_app.search_factories import ingest, ingest_ready, item
from tests.shared_rows import rows_shared_by_the_tests
from tests.search_app.tracing import RecordingTrace

MODES = ("vector", "text", "recent", "structured")
NOTES = ["Budget draft for the offsite", "The budget needs another review", "Budget approved by finance",
         "Maria confirmed the Q3 budget", "The hiking trail near the lake is closed",
         "Replace the bicycle chain before the race", "Finance asked for the travel review",
         "Lunch with the offsite planning team"]


def at(day: int) -> str:
    return f"2026-07-{day:02d}T09:00:00Z"


def in_scope(workspace, *, entities=None, types=None, status="active", current=True) -> dict[uuid.UUID, Record]:
    """The oracle: every record the scope admits, computed row by row in Python."""
    rows = list(Record.objects.filter(workspace=workspace, collection="main"))
    admitted = {}
    for row in rows:
        if row.enriched_at is None or row.tombstone:
            continue
        if entities is not None and row.entity not in entities:
            continue
        if types is not None and row.type not in types:
            continue
        if status != "all" and row.status != status:
            continue
        if current and row.key is not None and any(
                other.key == row.key and other.entity == row.entity and other.status == row.status
                and other.seq > row.seq for other in rows):
            continue
        admitted[row.id] = row
    return admitted


class BackendContract:
    """Subclasses set ``backend`` (a ``CandidateBackend``)."""

    backend = None

    @pytest.fixture(scope="class")
    @classmethod
    def shared_corpus(cls, django_db_setup, django_db_blocker):
        """Events of two entities and speakers, a fact restated (the older value superseded), a
        retracted fact, a draft, an unready newer value hiding a ready one, and another workspace's
        records matching every query; written once for the class (every test here only reads)."""
        with rows_shared_by_the_tests(django_db_blocker):
            catalog, _ = workspace_create(name="acme")
            catalog_load(workspace=catalog, directory=EXAMPLE_CATALOG)
            catalog.refresh_from_db()
            other, _ = workspace_create(name="other-co")
            catalog_load(workspace=other, directory=EXAMPLE_CATALOG)
            yield cls._write_corpus(catalog, other)

    @pytest.fixture
    def corpus(self, db, shared_corpus):
        """``shared_corpus``, each test in a savepoint of its own."""
        return shared_corpus

    @staticmethod
    def _write_corpus(catalog, other):
        events = [item(text, entity=f"user-{i % 2}", type="note" if i % 3 else "call", occurred_at=at(1 + i),
                       content={"text": text, "speaker": "ana" if i % 2 else "bo"}) for i, text in enumerate(NOTES)]
        facts = [item("Plan is basic.", type="fact", key="plan", occurred_at=at(10)),
                 item("Plan is the budget tier.", type="fact", key="plan", occurred_at=at(11)),
                 item("City is Lisbon, budget friendly.", type="fact", key="city", occurred_at=at(12)),
                 item("Plan is the trial budget.", type="fact", key="plan", status="draft", occurred_at=at(13)),
                 item("Team is finance and budget.", type="fact", key="team", occurred_at=at(14))]
        ids = ingest_ready(catalog, events + facts)
        city = ids[len(events) + 2]
        ingest_ready(catalog, [{"entity": "user-1", "collection": "main", "type": "fact", "key": "city",
                                "tombstone": True, "derived_from": [str(city)]}])
        ingest(catalog, [item("Team is the budget review board.", type="fact", key="team", occurred_at=at(15))])
        ingest_ready(other, [item(text, occurred_at=at(20)) for text in NOTES])
        return catalog

    def source(self, workspace, mode: str, *, q: str | None = "budget review", **scope):
        body = {"mode": mode, "k": 5, "scope": {"collections": ["main"], **scope}}
        if mode in ("vector", "text", "hybrid"):
            body["q"] = q
        if mode == "structured":
            body["order_by"] = [{"field": "speaker"}]
        spec = search_spec_parse(body)
        catalog = catalog_for_workspace(workspace)
        resolved = resolve_search(spec, catalog)[0]
        embedding = catalog.value("models", "models").embedding
        vector = None
        if mode in ("vector", "hybrid"):
            from catalog_app.embedding import embed_query

            vector = embed_query(embedding, q, workspace_id=workspace.pk)
        return resolved, QueryContext(workspace.pk, spec.q, vector, embedding.space, embedding.dimensions)

    def test_it_declares_what_it_runs(self):
        assert self.backend.CAPABILITIES == BACKEND_CAPABILITIES[self.backend.NAME]
        assert set(self.backend.CAPABILITIES) <= set(MODES)

    @pytest.mark.parametrize("mode", [*MODES, "hybrid"])
    @pytest.mark.parametrize("scope", [{}, {"entities": ["user-1"]}, {"types": ["fact"]}, {"status": "all"},
                                       {"versions": "all"}], ids=["plain", "entity", "type", "status", "history"])
    def test_every_proposal_lies_in_the_scope_at_most_cap_once(self, corpus, mode, scope):
        resolved, context = self.source(corpus, mode, **scope)
        ids, _, _ = self.backend.candidate_ids(resolved, context)
        admitted = in_scope(corpus, entities=scope.get("entities"), types=scope.get("types"),
                            status=scope.get("status", "active"), current=scope.get("versions") != "all")
        assert set(ids) <= set(admitted)
        assert len(ids) == len(set(ids)) <= resolved.source.candidate_cap()

    def test_recent_proposes_the_whole_scope_newest_first(self, corpus):
        resolved, context = self.source(corpus, "recent")
        ids, _, _ = self.backend.candidate_ids(resolved, context)
        expected = sorted(in_scope(corpus).values(), key=lambda r: (r.occurred_at, r.seq), reverse=True)
        assert ids == [row.id for row in expected]

    def test_vector_proposals_come_best_similarity_first(self, corpus):
        resolved, context = self.source(corpus, "vector")
        ids, _, _ = self.backend.candidate_ids(resolved, context)
        rows = self.backend.reload_rows(resolved, context, ids, reads=frozenset({"similarity"}))
        assert [row.id for row in rows] == ids and len(ids) == len(in_scope(corpus))
        similarities = [row.similarity for row in rows]
        assert similarities == sorted(similarities, reverse=True)

    def test_text_proposals_share_a_word_with_the_query(self, corpus):
        resolved, context = self.source(corpus, "text")
        ids, _, _ = self.backend.candidate_ids(resolved, context)
        rows = self.backend.reload_rows(resolved, context, ids, reads=frozenset({"text_match"}))
        assert ids and all(row.text_match > 0 for row in rows)
        words = ("budget", "review")
        expected = {row.id for row in in_scope(corpus).values() if any(w in row.text.lower() for w in words)}
        assert set(ids) == expected

    def test_structured_proposals_follow_the_order(self, corpus):
        resolved, context = self.source(corpus, "structured")
        ids, _, _ = self.backend.candidate_ids(resolved, context)
        rows = self.backend.reload_rows(resolved, context, ids, reads=frozenset())
        speakers = [(row.content or {}).get("speaker") for row in rows]
        present = [s for s in speakers if s is not None]
        assert present == sorted(present) and set(ids) == set(in_scope(corpus))

    def test_the_reload_reapplies_the_scope_and_keeps_the_order(self, corpus):
        resolved, context = self.source(corpus, "recent", entities=["user-0"])
        outside = [row.id for row in Record.objects.exclude(workspace=corpus)[:2]]
        hidden = [row.id for row in Record.objects.filter(workspace=corpus, entity="user-1")[:2]]
        inside = list(in_scope(corpus, entities=["user-0"]))
        asked = [*reversed(inside), *outside, *hidden, uuid.uuid4()]
        reloaded = self.backend.reload_by_id(resolved, context, asked, reads=frozenset())
        assert set(reloaded) == set(asked)
        assert all(reloaded[i] is None for i in [*outside, *hidden]) and all(reloaded[i] for i in inside)
        rows = self.backend.reload_rows(resolved, context, asked, reads=frozenset())
        assert [row.id for row in rows] == list(reversed(inside))

    def test_bodies_read_later_equal_bodies_read_at_once(self, corpus):
        resolved, context = self.source(corpus, "recent")
        ids, _, _ = self.backend.candidate_ids(resolved, context)
        lean = self.backend.reload_rows(resolved, context, ids, reads=frozenset(), bodies=False)
        assert all(row.text is None and row.content is None for row in lean)
        full = self.backend.reload_rows(resolved, context, ids, reads=frozenset())
        assert self.backend.with_bodies(lean) == full

    def test_bm25_statistics_count_the_scope(self, corpus):
        resolved, context = self.source(corpus, "text", entities=["user-1"])
        ids, stats, _ = self.backend.candidate_ids(resolved, context, bm25={"bm25", "bm25_en"})
        admitted = in_scope(corpus, entities=["user-1"])
        assert stats["bm25"].n == stats["bm25_en"].n == len(admitted)
        assert stats["bm25"].terms == ("budget", "review") and stats["bm25_en"].terms == ("budget", "review")
        assert set(ids) <= set(admitted)
        rows = self.backend.reload_rows(resolved, context, ids, stats, reads=frozenset({"bm25", "bm25_en"}))
        assert all(row.bm25 is not None and row.bm25_en is not None for row in rows)

    def test_early_reloads_change_no_row(self, corpus):
        resolved, context = self.source(corpus, "hybrid")
        early = SimpleNamespace(calls=[])

        def early_reload(ids):
            early.calls.append(list(ids))
            return self.backend.reload_by_id(resolved, context, ids, reads=frozenset({"similarity"}))

        ids, _, reloaded = self.backend.candidate_ids(resolved, context, early_reload=early_reload)
        assert set(reloaded) <= set(ids)
        two_step = self.backend.reload_rows(resolved, context, ids, reads=frozenset({"similarity"}),
                                            reloaded=reloaded)
        assert two_step == self.backend.reload_rows(resolved, context, ids, reads=frozenset({"similarity"}))

    @pytest.mark.parametrize("mode", ["hybrid", *MODES])
    def test_a_trace_sees_each_channel_of_the_mode_and_changes_no_candidate(self, corpus, mode):
        resolved, context = self.source(corpus, mode)
        trace = RecordingTrace()
        traced, _, _ = self.backend.candidate_ids(resolved, context, trace=trace)
        assert traced == self.backend.candidate_ids(resolved, context)[0]
        channels = {"hybrid": {"channel vector", "channel text", "channel recent"}}.get(mode, {f"channel {mode}"})
        assert {entry["name"] for entry in trace.stages} == channels and channels <= set(SEARCH_STAGES)
        assert all(entry["source"] == resolved.source.name for entry in trace.stages)

    # --- context retrieval's matches (retrieval_app.legs) ------------------------------------------

    @staticmethod
    def ready_main(workspace) -> tuple[Clause, dict[uuid.UUID, Record]]:
        """A retrieval-style condition over ``r`` and its oracle: the workspace's ready, active,
        live records of ``main`` (superseded values included: the condition is the caller's)."""
        where = Clause("r.workspace_id = %s AND r.collection = 'main' AND r.enriched_at IS NOT NULL "
                       "AND r.status = 'active' AND NOT r.tombstone", (workspace.pk,))
        rows = Record.objects.filter(workspace=workspace, collection="main", enriched_at__isnull=False,
                                     status="active", tombstone=False)
        return where, {row.id: row for row in rows}

    def test_text_matches_are_the_records_sharing_a_word_best_first(self, corpus):
        where, admitted = self.ready_main(corpus)
        matches = self.backend.text_matches(where, "budget review budget", cap=100)
        expected = {i for i, row in admitted.items() if any(w in row.text.lower() for w in ("budget", "review"))}
        assert {match[0] for match in matches} == expected and len(matches) == len(expected)
        assert all((admitted[i].key, admitted[i].entity) == (key, entity) for i, _, key, entity in matches)
        scores = [score for _, score, _, _ in matches]
        assert all(score > 0 for score in scores) and scores == sorted(scores, reverse=True)
        assert self.backend.text_matches(where, "budget review", cap=2) == matches[:2]

    def test_vector_matches_cover_the_condition_and_a_floor_keeps_a_prefix(self, corpus):
        where, admitted = self.ready_main(corpus)
        _, context = self.source(corpus, "vector")
        args = (where, corpus.pk, context.vector, context.space, context.dimensions)
        every = self.backend.vector_matches(*args, cap=100, min_similarity=-1.0)
        assert {match[0] for match in every} == set(admitted) and len(every) == len(admitted)
        similarities = [similarity for _, similarity, _, _ in every]
        assert similarities == sorted(similarities, reverse=True)
        floor = similarities[len(similarities) // 2]
        kept = self.backend.vector_matches(*args, cap=100, min_similarity=floor)
        assert kept == [match for match in every if match[1] >= floor]
        assert self.backend.vector_matches(*args, cap=3, min_similarity=-1.0) == every[:3]

    @pytest.mark.parametrize("with_vector", [False, True], ids=["text", "text and vector"])
    def test_match_count_counts_the_union_of_the_matches(self, corpus, with_vector):
        """Exactly the union when ``cap`` holds every match; under a smaller ``cap`` (which of the
        matches it counts is not ordered) at most ``cap`` of each and at least ``cap`` of one."""
        where, _ = self.ready_main(corpus)
        _, context = self.source(corpus, "vector")
        vector = (context.vector, context.space, context.dimensions) if with_vector else None
        text = {match[0] for match in self.backend.text_matches(where, "budget review", cap=100)}
        near = set() if vector is None else {match[0] for match in self.backend.vector_matches(
            where, corpus.pk, *vector, cap=100, min_similarity=0.2)}
        count = partial(self.backend.match_count, where, corpus.pk, "budget review", vector, min_similarity=0.2)
        assert count(cap=100) == len(text | near)
        assert min(4, max(len(text), len(near))) <= count(cap=4) <= min(4, len(text)) + min(4, len(near))
