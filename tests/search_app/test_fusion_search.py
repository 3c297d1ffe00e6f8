"""Combined searches end to end through ``POST /search`` (views-and-search "Combining several
searches" through "Explaining a result"; reference 7.2 item 8, A.1 steps 10-11, A.3).

Articles (fixtures/catalogs/graph) are ready at insert; every source is a text search ranked
by ``[score, priority]``, so each source's list is known exactly:

    billing (topic eq billing): a1 (9), a2 (7), a5 (5)
    all:                        a1 (9), a3 (8), a2 (7), a4 (6), a5 (5)
"""
import threading
from fractions import Fraction

import pytest
from django.db import transaction

from search_app.backends import pg as pg_backend
from tests.search_app.graph_factories import article, load_graph_catalog, search, write

SCORED = {"scored": True, "score_semantics": "query_relative", "score_range": [0.0, 1.0], "normalization": "min_max",
          "normalization_scope": "ranked_candidates", "calibrated": False, "higher_is_better": True,
          "native_score_field": "rank_score"}
ARTICLES = {"a1": ("billing", 9), "a2": ("billing", 7), "a3": ("support", 8), "a4": ("support", 6),
            "a5": ("billing", 5)}
SCOPE = {"collections": ["articles"]}
RANK = ["score", "priority"]


def source(name, k, weight=1.0, **extra):
    return {"name": name, "mode": "text", "scope": SCOPE, "rank": RANK, "k": k, "weight": weight, **extra}


def billing(k=2, weight=1.0):
    return source("billing", k, weight, where={"topic": {"eq": "billing"}})


def fused(*sources, **top):
    return {"q": "invoice", "fuse": {"kind": "rrf"}, "k": 10, "sources": list(sources), **top}


@pytest.fixture
def ids(workspace):
    load_graph_catalog(workspace)
    items = [article(f"invoice {name}", topic=topic, priority=priority) for name, (topic, priority) in ARTICLES.items()]
    return dict(zip(ARTICLES, write(workspace, items)))


def names(ids, body):
    by_id = {record_id: name for name, record_id in ids.items()}
    return [by_id[hit["id"]] for hit in body["hits"]]


def rrf(*positions, constant=60):
    """The exact weighted RRF sum of (weight, position) pairs, rounded once like the engine."""
    return float(sum(Fraction(weight) / (constant + position) for weight, position in positions))


def test_a_combined_search_reports_source_ranks_rrf_values_and_one_backend_per_source(api, ids):
    body = search(api, fused(billing(), source("all", 3)))
    values = {"a1": rrf((1, 1), (1, 1)), "a2": rrf((1, 2), (1, 3)), "a3": rrf((1, 2))}
    low, high = values["a3"], values["a1"]
    assert body["hits"] == [
        {"id": ids["a1"], "rank": 1, "score": 1.0, "rank_score": values["a1"],
         "source_ranks": {"billing": 1, "all": 1}},
        {"id": ids["a2"], "rank": 2, "score": pytest.approx((values["a2"] - low) / (high - low)),
         "rank_score": values["a2"], "source_ranks": {"billing": 2, "all": 3}},
        {"id": ids["a3"], "rank": 3, "score": 0.0, "rank_score": values["a3"], "source_ranks": {"all": 2}},
    ]
    assert body["ranking"] == {"kind": "rrf", **SCORED}
    assert body["backend"] == [{"source": "billing", "name": "pg", "layout": None, "candidate_count": 3},
                               {"source": "all", "name": "pg", "layout": None, "candidate_count": 5}]
    assert body["profiles"] == ["pg_default"]
    assert body["rendered"] is None and body["truncated"] is False


def test_each_source_is_cut_to_its_own_k_before_merging(api, ids):
    assert "a5" not in names(ids, search(api, fused(billing(k=2), source("all", 3))))
    body = search(api, fused(billing(k=3), source("all", 3)))
    assert names(ids, body) == ["a1", "a2", "a3", "a5"]
    assert body["hits"][3]["source_ranks"] == {"billing": 3}
    assert body["hits"][3]["rank_score"] == rrf((1, 3))


def test_the_top_level_k_applies_after_merging_and_the_pool_sets_the_bounds(api, ids):
    body = search(api, fused(billing(), source("all", 3), k=2))
    assert names(ids, body) == ["a1", "a2"]
    low, high = rrf((1, 2)), rrf((1, 1), (1, 1))  # a3, merged but not returned, is the lower bound
    assert body["hits"][1]["score"] == pytest.approx((rrf((1, 2), (1, 3)) - low) / (high - low))
    assert 0 < body["hits"][1]["score"] < 1


def test_rank_constant_changes_the_contributions(api, ids):
    body = search(api, {**fused(billing(), source("all", 3)), "fuse": {"kind": "rrf", "rank_constant": 1}})
    assert [hit["rank_score"] for hit in body["hits"]] == [rrf((1, 1), (1, 1), constant=1),
                                                           rrf((1, 2), (1, 3), constant=1), rrf((1, 2), constant=1)]


def test_boost_multiplies_the_rrf_value_by_max_0_boost_from_stored_scores(api, ids):
    boost = ["sum", [["score", "priority"], ["const", -7.5]]]  # a1: 1.5, a3: 0.5, a2: -0.5 -> 0
    plain = {hit["id"]: hit for hit in search(api, fused(billing(), source("all", 3)))["hits"]}
    body = search(api, fused(billing(), source("all", 3), boost=boost))
    assert names(ids, body) == ["a1", "a3", "a2"]
    expected = {"a1": plain[ids["a1"]]["rank_score"] * 1.5, "a3": plain[ids["a3"]]["rank_score"] * 0.5, "a2": 0.0}
    assert [hit["rank_score"] for hit in body["hits"]] == [expected[name] for name in names(ids, body)]
    assert [hit["source_ranks"] for hit in body["hits"]] == [plain[ids[n]]["source_ranks"] for n in ("a1", "a3", "a2")]
    assert [hit["score"] for hit in body["hits"]] == pytest.approx([1.0, expected["a3"] / expected["a1"], 0.0])


@pytest.mark.parametrize("boost", [["similarity"], ["text_match"], ["product", 2.0, ["similarity"]]])
def test_boost_may_not_read_query_signals(api, ids, boost):
    body = search(api, fused(billing(), source("all", 3), boost=boost), 422)
    assert body["error"] == "request_schema" and body["path"].startswith("boost")


@pytest.mark.parametrize("small, large", [((1, 2), (10, 20)), ((1, 2), (0.5, 1.0)), ((1.1, 1.0), (11, 10))])
def test_only_the_ratio_between_weights_matters(api, ids, small, large):
    first = search(api, fused(billing(weight=small[0]), source("all", 5, weight=small[1])))
    second = search(api, fused(billing(weight=large[0]), source("all", 5, weight=large[1])))
    assert [hit["id"] for hit in first["hits"]] == [hit["id"] for hit in second["hits"]]
    assert [hit["source_ranks"] for hit in first["hits"]] == [hit["source_ranks"] for hit in second["hits"]]
    assert [hit["score"] for hit in first["hits"]] == pytest.approx([hit["score"] for hit in second["hits"]])
    ratio = large[0] / small[0]
    assert [hit["rank_score"] * ratio for hit in first["hits"]] == pytest.approx(
        [hit["rank_score"] for hit in second["hits"]])


def test_a_weight_past_the_sweep_threshold_puts_its_source_first(api, ids):
    # The sweep threshold is (60 + 3) / (60 + 1) ~ 1.03: at 2.0 billing's worst (a5: 2/63 + 1/65)
    # beats the best record only the other source found (a3: 1/62).
    body = search(api, fused(billing(k=3, weight=2.0), source("all", 5)))
    assert names(ids, body)[:3] == ["a1", "a2", "a5"]


def test_repeated_runs_return_identical_responses(api, ids):
    body = fused(billing(k=3), source("all", 5), source("support", 2, where={"topic": {"eq": "support"}}),
                 include=["text", "key"], render=True)
    first = search(api, body)
    assert all(search(api, body) == first for _ in range(3))


# --- what combined searches forbid --------------------------------------------------------------

@pytest.mark.parametrize("extra, path", [
    ({"mode": "text"}, "mode"),
    ({"scope": SCOPE}, "scope"),
    ({"where": {"topic": {"eq": "billing"}}}, "where"),
    ({"order_by": [{"field": "topic"}]}, "order_by"),
    ({"rank": RANK}, "rank"),
])
def test_per_search_keys_are_not_allowed_at_the_top_level(api, ids, extra, path):
    body = search(api, {**fused(billing(), source("all", 3)), **extra}, 422)
    assert (body["error"], body["path"]) == ("request_schema", path)


@pytest.mark.parametrize("change, path", [
    (lambda b: b.pop("fuse"), "fuse"),
    (lambda b: b.update(fuse={"kind": "borda"}), "fuse.kind"),
    (lambda b: b.update(fuse={"kind": "rrf", "rank_constant": 0}), "fuse.rank_constant"),
    (lambda b: b.update(fuse={"kind": "rrf", "rank_constant": 1001}), "fuse.rank_constant"),
    (lambda b: b.update(sources=[]), "sources"),
    (lambda b: b.update(sources=[source(f"s{i}", 1) for i in range(9)]), "sources"),
    (lambda b: b.update(sources=[source("same", 1), source("same", 2)]), "sources[1].name"),
    (lambda b: b["sources"][0].pop("name"), "sources[0].name"),
    (lambda b: b["sources"][0].pop("mode"), "sources[0].mode"),
    (lambda b: b["sources"][0].update(weight=0), "sources[0].weight"),
    (lambda b: b["sources"][0].update(weight=100.5), "sources[0].weight"),
    (lambda b: b["sources"][0].update(k=0), "sources[0].k"),
    (lambda b: b["sources"][0].update(k=101), "sources[0].k"),
    (lambda b: b["sources"][0].update(rerank={"backend": "none"}), "sources[0].rerank"),
    (lambda b: b.pop("q"), "q"),
])
def test_invalid_combined_searches_are_rejected(api, ids, change, path):
    body = fused(billing(), source("all", 3))
    change(body)
    answer = search(api, body, 422)
    assert (answer["error"], answer["path"]) == ("request_schema", path)


def test_a_single_search_takes_neither_fuse_nor_boost(api, ids):
    single = {"q": "invoice", "mode": "text", "scope": SCOPE}
    assert search(api, {**single, "fuse": {"kind": "rrf"}}, 422)["path"] == "fuse"
    assert search(api, {**single, "boost": ["const", 1]}, 422)["path"] == "boost"


def test_recent_and_structured_sources_need_no_q(api, ids):
    body = search(api, {"fuse": {"kind": "rrf"}, "sources": [
        {"name": "newest", "mode": "recent", "scope": SCOPE, "k": 2},
        {"name": "by_topic", "mode": "structured", "scope": SCOPE, "order_by": [{"field": "topic"}], "k": 2}]})
    assert body["ranking"]["kind"] == "rrf" and len(body["hits"]) >= 2


def test_one_source_may_not_span_two_search_profiles(api, ids, workspace):
    write(workspace, [{"entity": "cust", "collection": "archive", "type": "note", "text": "invoice archived"}])
    spanning = source("mixed", 3, scope={"collections": ["articles", "archive"]})
    body = search(api, fused(billing(), spanning), 422)
    assert (body["error"], body["path"]) == ("search_profile", "sources[1].scope.collections")
    separate = search(api, fused(billing(), {"name": "archive", "mode": "text", "scope": {"collections": ["archive"]}}))
    assert separate["profiles"] == ["pg_archive", "pg_default"]
    assert [entry["source"] for entry in separate["backend"]] == ["billing", "archive"]


# --- sources run concurrently outside a transaction -----------------------------------------------

@pytest.mark.django_db(transaction=True)
def test_concurrent_sources_give_the_sequential_result(api, ids, settings, monkeypatch):
    settings.MEMSEEK = {"TOUCH_ON_READ": False, "SEARCH_MAX_CONCURRENCY": 3}
    threads = set()
    original = pg_backend.candidate_ids

    def recording(*args, **kwargs):
        threads.add(threading.get_ident())
        return original(*args, **kwargs)

    monkeypatch.setattr(pg_backend, "candidate_ids", recording)
    body = fused(billing(k=3), source("all", 5), source("support", 2, where={"topic": {"eq": "support"}}),
                 include=["text"])
    concurrent = search(api, body)
    assert threading.get_ident() not in threads and len(threads) >= 1  # worker threads ran the sources
    threads.clear()
    with transaction.atomic():  # inside a transaction the sources run one after another here
        sequential = search(api, body)
    assert threads == {threading.get_ident()}
    assert concurrent == sequential
    assert names(ids, concurrent) == ["a1", "a3", "a2", "a4", "a5"]


def test_every_combined_source_must_name_its_collections(api, ids):
    unscoped = {"name": "everything", "mode": "text", "k": 5}
    response = api.post("/search", fused(source("billing", 2), unscoped), format="json")
    assert response.status_code == 422
    assert (response.json()["error"], response.json()["path"]) == ("search_scope", "sources[1].scope.collections")
