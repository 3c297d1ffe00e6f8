"""POST /evaluate: recall@k, nDCG@k and MRR per query and overall for graded queries, through
/retrieve (raw, topN = k) or a named view; no receipts and no touches; every error with its code
and path."""
import uuid

import ir_measures
import pytest
from ir_measures import RR, Qrel, R, ScoredDoc, nDCG

from catalog_app.models import Record
from retrieval_app.evaluate_request import MAX_GRADE
from retrieval_app.models import Receipt
from search_app.views.service import view_query
from tests.retrieval_app.factories import catalog_dir, event, fact, link, load, policy, retrieve, write

SEARCH_VIEW = """views:
  - name: recall_events
    version: 1
    active: true
    parameters:
      task: {type: string, required: true}
      label: {type: string, required: false}
    query:
      mode: text
      q: "{{task}}"
      scope: {collections: [events]}
      k: 20
"""


@pytest.fixture
def loaded(workspace):
    return load(workspace)


@pytest.fixture
def corpus(loaded):
    """Five events, each its own entity (so no entity leg joins them), one fact and one policy."""
    ids = write(loaded, [
        event("zebra crossing repaired on the main road", entity="e1"),
        event("invoice dispute about the zebra mural", entity="e2"),
        event("mural invoice paid in full", entity="e3"),
        event("quarterly budget meeting notes", entity="e4"),
        event("budget review moved to Tuesday", entity="e5"),
        fact("budget", "the approved budget is 50k", entity="e6"),
        policy("Budget figures are confidential", entity="e7"),
    ])
    return dict(zip(("zebra_road", "zebra_mural", "mural_paid", "budget_notes", "budget_review", "budget_fact",
                     "policy"), ids))


def evaluate(api, body: dict, status: int = 200) -> dict:
    response = api.post("/evaluate", body, format="json")
    assert response.status_code == status, response.json()
    return response.json()


def raw_ranking(api, query: str, k: int = 10, **overrides) -> list[str]:
    """What /retrieve ranks for ``query`` untrimmed: entries by score, policies excluded."""
    payload = retrieve(api, {"query": query, "raw": True, "topN": k, **overrides})
    entries = [entry for name in ("facts", "events", "derived") for entry in payload["sections"][name]]
    return [entry["id"] for entry in sorted(entries, key=lambda entry: -entry["score"])]


def reference(relevant: dict, ranking: list[str], k: int) -> dict:
    """The same run scored by ir-measures directly."""
    qrels = [Qrel("q", record_id, grade) for record_id, grade in relevant.items()]
    run = [ScoredDoc("q", record_id, float(len(ranking) - position)) for position, record_id in enumerate(ranking)]
    values = {str(metric.measure): metric.value for metric in ir_measures.iter_calc([nDCG @ k, R @ k, RR @ k], qrels,
                                                                                     run)}
    return {"ndcg": values[f"nDCG@{k}"], "recall": values[f"R@{k}"], "rr": values[f"RR@{k}"]}


def test_a_perfect_ranking_scores_one_everywhere(corpus, api):
    body = evaluate(api, {"queries": [{"id": "road", "query": "zebra crossing road",
                                       "relevant": {corpus["zebra_road"]: 1}}]})
    (query,) = body["queries"]
    assert query["ranking"][0] == corpus["zebra_road"]
    assert query["metrics"] == {"recall": 1.0, "ndcg": 1.0, "rr": 1.0}
    assert body["overall"] == {"queries": 1, "recall": 1.0, "ndcg": 1.0, "mrr": 1.0}
    assert (body["target"], body["k"]) == ({"kind": "retrieve"}, 10)
    assert body["measures"] == {"recall": "R@10", "ndcg": "nDCG@10", "rr": "RR@10"}
    assert (query["id"], query["index"], query["query"]) == ("road", 0, "zebra crossing road")
    assert (query["relevantRetrieved"], query["relevantTotal"], query["unknownRelevant"]) == \
        ([corpus["zebra_road"]], 1, [])


def test_the_ranking_is_the_raw_retrieval_order_and_a_relevant_record_at_rank_two_has_rr_one_half(corpus, api):
    ranking = raw_ranking(api, "zebra mural invoice")
    assert len(ranking) >= 2
    body = evaluate(api, {"queries": [{"query": "zebra mural invoice", "relevant": {ranking[1]: 1}}]})
    (query,) = body["queries"]
    assert query["ranking"] == ranking
    assert corpus["policy"] not in query["ranking"]
    assert query["metrics"]["rr"] == 0.5 and query["metrics"]["recall"] == 1.0
    assert body["overall"]["mrr"] == 0.5


def test_graded_ndcg_matches_ir_measures_on_the_same_run(corpus, api):
    ranking = raw_ranking(api, "budget invoice mural zebra", k=5)
    assert len(ranking) >= 4
    relevant = {ranking[3]: 3, ranking[0]: 1, ranking[1]: 0, str(uuid.uuid4()): 2}
    body = evaluate(api, {"k": 5, "queries": [{"query": "budget invoice mural zebra", "relevant": relevant}]})
    (query,) = body["queries"]
    assert query["ranking"] == ranking[:5]
    expected = reference(relevant, query["ranking"], 5)
    assert query["metrics"] == pytest.approx(expected)
    assert 0 < query["metrics"]["ndcg"] < 1 and query["metrics"]["recall"] == pytest.approx(2 / 3)
    # By hand: DCG = 1/log2(2) + 3/log2(5); ideal = 3/log2(2) + 2/log2(3) + 1/log2(4).
    import math
    assert query["metrics"]["ndcg"] == pytest.approx((1 + 3 / math.log2(5)) / (3 + 2 / math.log2(3) + 0.5))
    assert query["unknownRelevant"] == sorted(key for key in relevant if key not in corpus.values())


def test_overall_is_the_mean_over_queries_and_an_empty_ranking_scores_zero(corpus, api):
    body = evaluate(api, {"queries": [
        {"query": "zebra crossing road", "relevant": {corpus["zebra_road"]: 1}},
        {"query": "nothing matches this at all", "relevant": {corpus["mural_paid"]: 1}},
        {"query": "zebra mural invoice", "relevant": {raw_ranking(api, "zebra mural invoice")[1]: 2}},
    ]})
    first, empty, third = (query["metrics"] for query in body["queries"])
    assert body["queries"][1]["ranking"] == []
    assert empty == {"recall": 0.0, "ndcg": 0.0, "rr": 0.0}
    assert body["overall"] == pytest.approx({"queries": 3, "recall": (1 + 0 + 1) / 3,
                                             "ndcg": (first["ndcg"] + third["ndcg"]) / 3, "mrr": (1 + 0 + 0.5) / 3})


def test_k_cuts_the_ranking(corpus, api):
    full = raw_ranking(api, "budget invoice mural zebra")
    body = evaluate(api, {"k": 2, "queries": [{"query": "budget invoice mural zebra", "relevant": {full[2]: 1}}]})
    assert body["queries"][0]["ranking"] == full[:2]
    assert body["queries"][0]["metrics"] == {"recall": 0.0, "ndcg": 0.0, "rr": 0.0}
    assert body["measures"]["ndcg"] == "nDCG@2"


def test_retrieve_fields_override_per_query(corpus, api):
    body = evaluate(api, {"queries": [
        {"query": "budget", "relevant": {corpus["budget_fact"]: 1}, "collections": ["facts"]},
        {"query": "budget", "relevant": {corpus["budget_review"]: 1}, "entity": "e5", "mode": "deterministic"},
    ]})
    assert body["queries"][0]["ranking"] == [corpus["budget_fact"]]
    assert body["queries"][1]["ranking"] == [corpus["budget_review"]]
    assert body["overall"]["recall"] == 1.0


def test_evaluation_stores_no_receipt_and_touches_nothing(corpus, api, django_capture_on_commit_callbacks):
    receipts = Receipt.objects.count()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        evaluate(api, {"queries": [{"query": "budget invoice mural zebra", "relevant": {corpus["zebra_road"]: 1}}]})
    assert callbacks == []
    assert Receipt.objects.count() == receipts
    with django_capture_on_commit_callbacks() as control:  # the same retrieval through /retrieve would touch
        retrieve(api, {"query": "budget invoice mural zebra", "raw": True, "topN": 10})
    assert len(control) == 1 and Receipt.objects.count() == receipts + 1
    assert set(Record.objects.values_list("access_count", flat=True)) == {0}


def test_a_search_view_target_ranks_by_its_hits_without_touching(workspace, api, tmp_path,
                                                                 django_capture_on_commit_callbacks):
    load(workspace, catalog_dir(tmp_path, files={"views/recall.yaml": SEARCH_VIEW}))
    ids = write(workspace, [event("zebra crossing repaired", entity="e1"), event("zebra zebra mural", entity="e2"),
                            event("budget meeting", entity="e3")])
    hits = [hit["id"] for hit in view_query(workspace=workspace, name="recall_events", body={"task": "zebra"})["hits"]]
    assert sorted(hits) == sorted(ids[:2])
    target = {"view": "recall_events"}
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        body = evaluate(api, {"target": target, "queries": [{"query": "zebra", "relevant": {hits[1]: 1}}]})
    assert callbacks == []
    assert body["queries"][0]["ranking"] == hits
    assert body["queries"][0]["metrics"]["rr"] == 0.5
    assert body["target"]["kind"] == "view" and body["target"]["view"]["name"] == "recall_events"
    assert body["target"]["queryParameter"] == "task" and body["target"]["view"]["version"] == 1


def test_a_graph_view_target_takes_the_query_as_its_seed(loaded, api):
    ids = write(loaded, [link("ada", "bob"), link("ada", "cy", "reports_to"), link("bob", "dan")])
    body = evaluate(api, {"target": {"view": "relations", "queryParameter": "seed", "parameters": {"depth": 1}},
                          "queries": [{"query": "ada", "relevant": {ids[1]: 1}}]})
    assert sorted(body["queries"][0]["ranking"]) == sorted(ids[:2])
    assert body["queries"][0]["metrics"]["recall"] == 1.0
    # The same run as POST /views/relations/query (one home: search_app.views.service.view_run).
    queried = view_query(workspace=loaded, name="relations", body={"seed": "ada", "depth": 1})
    assert body["queries"][0]["ranking"] == [str(hit["id"]) for hit in queried["hits"]]


BAD = str(uuid.uuid4())


@pytest.mark.parametrize("body, status, code, path", [
    ({}, 422, "request_schema", "queries"),
    ({"queries": []}, 422, "request_schema", "queries"),
    ({"queries": [{"query": "q", "relevant": {BAD: 1}}] * 101}, 422, "request_schema", "queries"),
    ({"queries": [{"query": "q", "relevant": {BAD: 1}}], "k": 0}, 422, "request_schema", "k"),
    ({"queries": [{"query": "q", "relevant": {BAD: 1}}], "k": 101}, 422, "request_schema", "k"),
    ({"queries": [{"query": "q", "relevant": {BAD: 1}}], "extra": 1}, 422, "request_schema", "extra"),
    ({"queries": ["q"]}, 422, "request_schema", "queries[0]"),
    ({"queries": [{"relevant": {BAD: 1}}]}, 422, "request_schema", "queries[0].query"),
    ({"queries": [{"query": "q"}]}, 422, "request_schema", "queries[0].relevant"),
    ({"queries": [{"query": "q", "relevant": {}}]}, 422, "request_schema", "queries[0].relevant"),
    ({"queries": [{"query": "q", "relevant": [BAD]}]}, 422, "request_schema", "queries[0].relevant"),
    ({"queries": [{"query": "q", "relevant": {BAD: -1}}]}, 422, "request_schema", f"queries[0].relevant.{BAD}"),
    ({"queries": [{"query": "q", "relevant": {BAD: 1_000_000_000}}]}, 422, "request_schema",
     f"queries[0].relevant.{BAD}"),
    ({"queries": [{"query": "q", "relevant": {BAD: MAX_GRADE + 1}}]}, 422, "request_schema",
     f"queries[0].relevant.{BAD}"),
    ({"queries": [{"query": "q", "relevant": {BAD: 1.5}}]}, 422, "request_schema", f"queries[0].relevant.{BAD}"),
    ({"queries": [{"query": "q", "relevant": {BAD: True}}]}, 422, "request_schema", f"queries[0].relevant.{BAD}"),
    ({"queries": [{"query": "q", "relevant": {BAD: "2"}}]}, 422, "request_schema", f"queries[0].relevant.{BAD}"),
    ({"queries": [{"query": "q", "relevant": {"doc-7": 1}}]}, 422, "request_schema", "queries[0].relevant.doc-7"),
    ({"queries": [{"query": "q", "relevant": {BAD: 0}}]}, 422, "request_schema", "queries[0].relevant"),
    ({"queries": [{"query": "q", "relevant": {BAD: 1}, "id": "a"}, {"query": "q", "relevant": {BAD: 1}, "id": "a"}]},
     422, "request_schema", "queries[1].id"),
    ({"queries": [{"query": "q", "relevant": {BAD: 1}, "raw": False}]}, 422, "request_schema", "queries[0].raw"),
    ({"queries": [{"query": "q", "relevant": {BAD: 1}, "topN": 5}]}, 422, "request_schema", "queries[0].topN"),
    ({"queries": [{"query": "q", "relevant": {BAD: 1}, "tokenBudget": 500}]}, 422, "request_schema",
     "queries[0].tokenBudget"),
    ({"queries": [{"query": "q", "relevant": {BAD: 1}, "mode": "fast"}]}, 422, "request_schema", "queries[0].mode"),
    ({"queries": [{"query": "q", "relevant": {BAD: 1}, "size": 3}]}, 422, "request_schema", "queries[0].size"),
    ({"queries": [{"query": "q", "relevant": {BAD: 1}, "parameters": {}}]}, 422, "request_schema",
     "queries[0].parameters"),
    ({"queries": [{"query": "q", "relevant": {BAD: 1}, "mode": "deterministic", "rerank": True}]}, 400,
     "mode_conflict", "queries[0].rerank"),
    ({"queries": [{"query": "x" * 9000, "relevant": {BAD: 1}}]}, 422, "query_too_long", "queries[0].query"),
    ({"queries": [{"query": "q", "relevant": {BAD: 1}}], "target": "search"}, 422, "request_schema", "target"),
    ({"queries": [{"query": "q", "relevant": {BAD: 1}}], "target": {"name": "v"}}, 422, "request_schema",
     "target.name"),
    ({"queries": [{"query": "q", "relevant": {BAD: 1}}], "target": {"view": "missing"}}, 404, "view_not_found",
     "target.view"),
    ({"queries": [{"query": "q", "relevant": {BAD: 1}}], "target": {"view": "relations"}}, 422, "view_parameter",
     "target.queryParameter"),
    ({"queries": [{"query": "q", "relevant": {BAD: 1}}], "target": {"view": "relations", "queryParameter": "seed",
                                                                    "parameters": {"seed": "a"}}},
     422, "request_schema", "target.parameters.seed"),
    ({"queries": [{"query": "q", "relevant": {BAD: 1}, "collections": ["events"]}],
      "target": {"view": "relations", "queryParameter": "seed"}}, 422, "request_schema", "queries[0].collections"),
    ({"queries": [{"query": "q", "relevant": {BAD: 1}, "parameters": {"depth": "deep"}}],
      "target": {"view": "relations", "queryParameter": "seed"}}, 422, "view_parameter", "queries[0].parameters.depth"),
])
def test_invalid_evaluations_name_their_code_and_path(loaded, api, body, status, code, path):
    error = evaluate(api, body, status=status)
    assert (error["error"], error.get("path")) == (code, path), error


def test_the_route_needs_a_key_and_the_openapi_document_describes_the_new_routes(db, tmp_path):
    from django.core.management import call_command
    from rest_framework.test import APIClient

    assert APIClient().post("/evaluate", {"queries": []}, format="json").status_code == 401
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml"))
    text = (tmp_path / "schema.yaml").read_text()
    for fragment in ("/evaluate:", "/receipts/{id}/feedback:", "Evaluation", "dedupeKey", "record_not_in_receipt"):
        assert fragment in text, fragment
