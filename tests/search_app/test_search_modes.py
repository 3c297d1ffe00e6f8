"""POST /search over real PostgreSQL, pgvector and the real MiniLM model: the five modes, the
ranking contract, public scores, semantic and lexical recall, and how often the query is
embedded (views-and-search "Choosing a search mode", "How to read score"; reference 7.2
items 1-3 and 7)."""
import threading
from datetime import datetime, timedelta, timezone

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from catalog_app import embedding as embedding_module
from catalog_app.record_sql import EMBEDDING, nearest_sql, vector_literal
from catalog_app.services.embedding_index import embedding_index_name
from search_app import pipeline as run_module
from tests.search_app.search_factories import ingest_ready, item

pytestmark = pytest.mark.model

SCORED_RANKING = {"kind": "rank_expression", "scored": True, "score_semantics": "query_relative",
                  "score_range": [0.0, 1.0], "normalization": "min_max", "normalization_scope": "ranked_candidates",
                  "calibrated": False, "higher_is_better": True, "native_score_field": "rank_score"}
T0 = datetime(2026, 7, 1, 10, 0, tzinfo=timezone.utc)

BUDGET = "Maria confirmed the Q3 budget"
UNRELATED = ("The hiking trail near the lake is closed because of snow",
             "My cat likes to sleep on the warm windowsill",
             "Replace the bicycle chain before the race on Sunday")


def search(api, body: dict, status: int = 200) -> dict:
    response = api.post("/search", body, format="json")
    assert response.status_code == status, response.json()
    return response.json()


def at(hours: float) -> str:
    return (T0 + timedelta(hours=hours)).isoformat()


@pytest.fixture
def budget_notes(catalog):
    """Three ready notes that share the word "budget", by different speakers and times."""
    return ingest_ready(catalog, [
        item("Budget draft for the offsite", content={"speaker": "ana"}, occurred_at=at(0)),
        item("The budget needs another review", content={"speaker": "bo"}, occurred_at=at(1)),
        item("Budget approved by finance", content={"speaker": "cy"}, occurred_at=at(2)),
    ])


MODE_BODIES = {
    "vector": {"q": "budget", "mode": "vector"},
    "text": {"q": "budget", "mode": "text"},
    "hybrid": {"q": "budget", "mode": "hybrid"},
    "recent": {"mode": "recent"},
    "structured": {"mode": "structured", "order_by": [{"field": "speaker"}]},
}


@pytest.mark.parametrize("mode", list(MODE_BODIES))
def test_every_mode_answers_with_contiguous_ranks(api, budget_notes, mode):
    body = search(api, {**MODE_BODIES[mode], "scope": {"collections": ["main"]}})
    assert [hit["rank"] for hit in body["hits"]] == [1, 2, 3]
    assert {hit["id"] for hit in body["hits"]} == {str(record_id) for record_id in budget_notes}
    assert body["backend"] == {"name": "pg", "layout": None, "candidate_count": 3}
    assert body["profiles"] == ["pg_default"]
    assert body["rendered"] is None and body["truncated"] is False


def test_structured_search_reports_no_scores(api, budget_notes):
    body = search(api, {"mode": "structured", "scope": {"collections": ["main"]},
                        "order_by": [{"field": "speaker", "direction": "desc"}]})
    assert body["ranking"] == {"kind": "structured", "scored": False}
    assert [hit["id"] for hit in body["hits"]] == [str(record_id) for record_id in reversed(budget_notes)]
    for hit in body["hits"]:
        assert hit["score"] is None
        assert "rank_score" not in hit


@pytest.mark.parametrize("mode", ["vector", "text", "hybrid", "recent"])
def test_scored_modes_report_the_exact_ranking_contract(api, budget_notes, mode):
    body = search(api, {**MODE_BODIES[mode], "scope": {"collections": ["main"]}})
    assert body["ranking"] == SCORED_RANKING
    scores = [hit["score"] for hit in body["hits"]]
    assert scores[0] == 1.0
    assert all(0.0 <= score <= 1.0 for score in scores)
    assert scores == sorted(scores, reverse=True)
    assert all(isinstance(hit["rank_score"], float) for hit in body["hits"])


@pytest.mark.parametrize("query", [{"mode": "recent"}, {"mode": "text", "q": "quarterly review"}])
def test_importance_example_9_5_2_scores_against_the_whole_pool(catalog, api, query):
    low, high, middle = ingest_ready(catalog, [item(f"Quarterly review, part {n}", scores={"importance": importance})
                                               for n, importance in ((1, 2), (2, 9), (3, 5))])
    body = search(api, {**query, "rank": ["score", "importance"], "k": 2})
    assert [hit["id"] for hit in body["hits"]] == [str(high), str(middle)]
    assert [hit["rank_score"] for hit in body["hits"]] == [9.0, 5.0]
    assert [hit["score"] for hit in body["hits"]] == [1.0, pytest.approx(3 / 7)]  # the unreturned 2 is the floor


def test_equal_rank_values_all_score_one_and_order_by_recency(catalog, api):
    ids = ingest_ready(catalog, [item(f"Tie {n}", scores={"importance": 4}, occurred_at=at(n)) for n in range(3)])
    body = search(api, {"mode": "recent", "rank": ["score", "importance"]})
    assert [hit["score"] for hit in body["hits"]] == [1.0, 1.0, 1.0]
    assert [hit["rank_score"] for hit in body["hits"]] == [4.0, 4.0, 4.0]
    assert [hit["id"] for hit in body["hits"]] == [str(record_id) for record_id in reversed(ids)]


def test_equal_values_and_times_fall_back_to_newest_ingestion_first(catalog, api):
    ids = ingest_ready(catalog, [item(f"Same moment {n}", occurred_at=at(0)) for n in range(3)])
    body = search(api, {"mode": "recent", "rank": ["const", 1]})
    assert [hit["id"] for hit in body["hits"]] == [str(record_id) for record_id in reversed(ids)]


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_meaning_search_finds_a_record_sharing_no_words_with_the_query(catalog, api, mode):
    unrelated = ingest_ready(catalog, [item(text) for text in UNRELATED])
    budget = ingest_ready(catalog, [item(BUDGET)])[0]
    body = search(api, {"q": "money approved for next quarter", "mode": mode, "include": ["text"]})
    assert body["hits"][0]["id"] == str(budget)
    assert body["hits"][0]["text"] == BUDGET
    assert {hit["id"] for hit in body["hits"][1:]} == {str(record_id) for record_id in unrelated}


def test_vector_similarity_orders_the_candidates(catalog, api):
    closest, middle, far = ingest_ready(catalog, [
        item("The customer asked for a refund of the duplicate charge"),
        item("The invoice was paid late"),
        item("The hiking trail near the lake is closed because of snow")])
    body = search(api, {"q": "I was billed twice and want my money back", "mode": "vector",
                        "rank": ["similarity"]})
    assert [hit["id"] for hit in body["hits"]] == [str(closest), str(middle), str(far)]
    values = [hit["rank_score"] for hit in body["hits"]]
    assert values == sorted(values, reverse=True) and -1.0 <= values[-1] < values[0] <= 1.0


@pytest.mark.parametrize(("exact_max", "exact"), [(2000, True), (2, False)])
def test_a_small_entity_scope_is_searched_exactly(catalog, api, settings, exact_max, exact):
    settings.MEMSEEK = {"VECTOR_EXACT_MAX": exact_max, "TOUCH_ON_READ": False}
    closest, middle, far = ingest_ready(catalog, [
        item("The customer asked for a refund of the duplicate charge"),
        item("The invoice was paid late"),
        item("The hiking trail near the lake is closed because of snow")])
    ingest_ready(catalog, [item(text, entity="user-2") for text in UNRELATED])
    with CaptureQueriesContext(connection) as captured:
        body = search(api, {"q": "I was billed twice and want my money back", "mode": "vector",
                            "scope": {"entities": ["user-1"]}, "rank": ["similarity"]})
    assert [hit["id"] for hit in body["hits"]] == [str(closest), str(middle), str(far)]
    statements = [query["sql"] for query in captured.captured_queries]
    # exact: every row of the 3-record scope compared, no HNSW settings; else the index walk
    assert any("<=>" in sql and "r.seq DESC LIMIT" in sql for sql in statements) == exact
    assert any("hnsw.ef_search" in sql for sql in statements) == (not exact)


@pytest.mark.parametrize(("exact_max", "exact"), [(2000, True), (2, False)])
def test_a_small_workspace_is_searched_exactly_whatever_the_scope(catalog, api, settings, exact_max, exact):
    """A workspace that has written at most VECTOR_EXACT_MAX records compares every one, so no
    approximate walk (past other workspaces' rows or dead ones) can come back short."""
    settings.MEMSEEK = {"VECTOR_EXACT_MAX": exact_max, "TOUCH_ON_READ": False}
    closest, middle, far = ingest_ready(catalog, [
        item("The customer asked for a refund of the duplicate charge"),
        item("The invoice was paid late"),
        item("The hiking trail near the lake is closed because of snow")])
    with CaptureQueriesContext(connection) as captured:
        body = search(api, {"q": "I was billed twice and want my money back", "mode": "vector",
                            "rank": ["similarity"]})
    assert [hit["id"] for hit in body["hits"]] == [str(closest), str(middle), str(far)]
    statements = [query["sql"] for query in captured.captured_queries]
    assert any("<=>" in sql and "r.seq DESC LIMIT" in sql for sql in statements) == exact
    assert any("hnsw.ef_search" in sql for sql in statements) == (not exact)


@pytest.mark.parametrize("exact", [True, False])
def test_only_the_exact_nearest_statement_stays_off_the_hnsw_index(catalog, exact):
    # Even a planner told that sequential scans and full sorts are dear (as a large,
    # stale-statistics table makes it think) cannot order the exact statement with the
    # approximate index, whose walk may stop short of a small scope's rows. Sorts are made dear
    # too so that, whatever statistics the run has left on the tiny table, the approximate
    # statement's only cheap order is the index walk; an incremental sort over the index's
    # order (how the old exact statement reached the index) stays allowed.
    ingest_ready(catalog, [item(text) for text in UNRELATED])
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT space, vector_dims(embedding) FROM {EMBEDDING} LIMIT 1")
        space, dimensions = cursor.fetchone()
    sql = nearest_sql(columns="r.id", space=space, dimensions=dimensions, where="TRUE", exact=exact)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute(f"EXPLAIN {sql}", [catalog.pk, vector_literal([0.1] * dimensions), 10])
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert (embedding_index_name(space) in plan) == (not exact), plan


def test_text_search_matches_records_sharing_only_some_words_of_a_long_question(catalog, api):
    budget, plans, _snow = ingest_ready(catalog, [item(BUDGET), item("Travel plans for the offsite are done"),
                                                  item(UNRELATED[0])])
    body = search(api, {"q": "What exactly did Maria decide about the spending plan for the autumn?",
                        "mode": "text", "rank": ["text_match"]})
    assert {hit["id"] for hit in body["hits"]} == {str(budget), str(plans)}
    assert all(hit["rank_score"] > 0 for hit in body["hits"])


def test_text_search_ranks_more_shared_words_higher(catalog, api):
    one_word, two_words = ingest_ready(catalog, [item("The budget is late"),
                                                 item("Maria confirmed the budget")])
    body = search(api, {"q": "maria budget", "mode": "text", "rank": ["text_match"]})
    assert [hit["id"] for hit in body["hits"]] == [str(two_words), str(one_word)]


def test_text_candidates_are_the_best_lexeme_matches_whatever_their_age(catalog, api, settings):
    settings.MEMSEEK = {"TOUCH_ON_READ": False}
    best_but_oldest, newer, newest, _other = ingest_ready(catalog, [
        item("budget budget budget review", occurred_at=at(0)), item("budget draft", occurred_at=at(1)),
        item("budget approved", occurred_at=at(2)), item(UNRELATED[1], occurred_at=at(3))])
    body = search(api, {"q": "budget", "mode": "text", "scope": {"collections": ["main"]},
                        "params": {"candidates": 2}})
    # BM25 over the English lexemes: three "budget" beat one; the two equal ones tie by ascending id.
    assert {hit["id"] for hit in body["hits"]} == {str(best_but_oldest), str(min(newer, newest))}
    assert body["backend"]["candidate_count"] == 2


def test_the_hybrid_text_channel_proposes_what_text_mode_proposes(catalog, api, settings, monkeypatch):
    from search_app.backends import pg as pg_backend

    settings.MEMSEEK = {"TOUCH_ON_READ": False}
    proposed = []
    real_text = pg_backend._text
    monkeypatch.setattr(pg_backend, "_text", lambda *args: proposed.append(real_text(*args)) or proposed[-1])
    best_but_oldest, newer, newest = ingest_ready(catalog, [
        item("budget budget budget review", occurred_at=at(0)), item("budget draft", occurred_at=at(1)),
        item("budget approved", occurred_at=at(2))])
    body = {"q": "budget review", "mode": "hybrid", "scope": {"collections": ["main"]}}
    assert len(search(api, body)["hits"]) == 3
    search(api, {**body, "mode": "text"})
    assert proposed[0] == proposed[1] and proposed[0][0] == best_but_oldest
    assert set(proposed[0]) == {best_but_oldest, newer, newest}


def test_text_search_with_only_stopwords_matches_nothing(catalog, api):
    ingest_ready(catalog, [item(BUDGET)])
    assert search(api, {"q": "the of and", "mode": "text"})["hits"] == []


@pytest.mark.parametrize(("mode", "calls"), [("text", 0), ("recent", 0), ("structured", 0), ("vector", 1),
                                             ("hybrid", 1)])
def test_only_meaning_searches_embed_the_query_once(api, budget_notes, monkeypatch, mode, calls):
    seen = []

    def spy(config, text, *, workspace_id):
        seen.append(text)
        return embedding_module.embed_query(config, text, workspace_id=workspace_id)

    monkeypatch.setattr(run_module, "embed_query", spy)
    body = search(api, {**MODE_BODIES[mode], "scope": {"collections": ["main"]}})
    assert len(body["hits"]) == 3
    assert seen == ["budget"] * calls


def test_public_score_bounds_come_from_the_ranked_candidates_not_the_table(catalog, api):
    # recent proposes newest first: the 4 candidates are importance 2..5; the oldest (1) is never ranked.
    ingest_ready(catalog, [item(f"Budget line {n}", occurred_at=at(n), scores={"importance": n}) for n in range(1, 6)])
    body = search(api, {"mode": "recent", "k": 2, "params": {"candidates": 4}, "rank": ["score", "importance"]})
    assert body["backend"]["candidate_count"] == 4
    assert [hit["rank_score"] for hit in body["hits"]] == [5.0, 4.0]
    assert [hit["score"] for hit in body["hits"]] == [1.0, pytest.approx(2 / 3)]


def test_empty_workspace_search_is_a_successful_empty_answer(catalog, api):
    body = search(api, {"q": "anything", "mode": "hybrid"})
    assert body["hits"] == [] and body["ranking"] == SCORED_RANKING


@pytest.mark.parametrize("mode", ["text", "hybrid"])
@pytest.mark.parametrize("q", ["Maria's budget: Q3 & Q4 | (approved)!", "budget <-> 'x' \\ \"quoted\" :* !maria",
                               "état du budget — café"])
def test_punctuation_in_the_query_is_text_not_syntax(catalog, api, mode, q):
    budget = ingest_ready(catalog, [item(BUDGET)])[0]
    body = search(api, {"q": q, "mode": mode})
    assert [hit["id"] for hit in body["hits"]] == [str(budget)]


def test_a_query_over_the_length_limit_is_rejected(catalog, api, settings):
    settings.MEMSEEK = {"MAX_QUERY_CHARS": 10}
    response = api.post("/search", {"q": "x" * 11, "mode": "text"}, format="json")
    assert response.status_code == 422
    assert (response.json()["error"], response.json()["path"]) == ("query_too_long", "q")


@pytest.mark.django_db(transaction=True)
def test_hybrid_channels_run_concurrently_and_merge_as_they_would_in_sequence(catalog, api, settings, monkeypatch):
    from django.db import transaction

    from search_app.backends import pg as pg_backend

    settings.MEMSEEK = {"TOUCH_ON_READ": False}
    ingest_ready(catalog, [item("Budget draft for the offsite", occurred_at=at(0)),
                           item("The budget needs another review", occurred_at=at(1)),
                           item(UNRELATED[0], occurred_at=at(2))])
    threads = set()
    real_text = pg_backend._text

    def recording(*args, **kwargs):
        threads.add(threading.current_thread().name)
        return real_text(*args, **kwargs)

    monkeypatch.setattr(pg_backend, "_text", recording)
    body = {"q": "budget review", "mode": "hybrid", "scope": {"collections": ["main"]}}
    concurrent = search(api, body)
    assert all(name.startswith("memseek-parallel-") for name in threads) and threads
    threads.clear()
    with transaction.atomic():
        sequential = search(api, body)
    assert threads == {threading.current_thread().name}
    assert [hit["id"] for hit in concurrent["hits"]] == [hit["id"] for hit in sequential["hits"]]
    # the recency term moves a little between the two calls
    assert [hit["score"] for hit in concurrent["hits"]] == pytest.approx([hit["score"] for hit in sequential["hits"]])
    assert len(concurrent["hits"]) == 3
    assert concurrent["backend"] == sequential["backend"]  # the same candidates were proposed
