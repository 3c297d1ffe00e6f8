"""``POST /evaluate``: retrieval quality measured through the API, with no side effects.

Each query of the request runs through its target and yields a ranking of record ids, cut to
``k``:

* ``retrieve`` (default): ``retrieve(..., side_effects=False)`` with ``raw: true`` and ``topN =
  k``, so neither the score floor nor a budget trims it; the ranking is the retrieval's final
  order over facts, events and derived records (policy records are not ranked and never count);
* a view: the hits of the active version, in order, run as ``POST /views/{name}/query`` runs it
  (``search_app.views.service.view_run``) but without ``search_respond``, which would touch the
  hits; graph and orphan views touch nothing.

Evaluation stores no receipt and touches no record (no ``last_accessed``/``access_count``
update): it must not change the rankings it measures.

Metrics come from ir-measures (its pytrec_eval provider), with the graded ``relevant`` grades as
qrels and the ranking as the run (score = k - position, so ties cannot reorder it): ``R@k``
(records with grade >= 1 retrieved, over all of them), ``nDCG@k`` (linear gains = grades, log2
discount, as trec_eval) and ``RR@k`` (1 / rank of the first record with grade >= 1). A query
whose ranking is empty scores 0 on all three (ir-measures leaves it out). ``overall`` is the
plain mean over every query; its ``mrr`` is the mean of ``rr``.
"""
from __future__ import annotations

import uuid
from collections.abc import Mapping

import ir_measures
from ir_measures import RR, Qrel, R, ScoredDoc, nDCG

from catalog_app.catalog.runtime import catalog_for_workspace
from catalog_app.models import Record
from memseek_site.errors import ApiError
from search_app.engine.spec import QueryTooLong
from search_app.views.parameters import bind_parameters
from search_app.views.service import view_definition, view_run

from .evaluate_request import EvalQuery, EvaluateRequest, ViewTarget, parse_evaluate_request
from .service import retrieve

METRICS = ("recall", "ndcg", "rr")


def evaluation_run(*, workspace, body) -> dict:
    """Run ``POST /evaluate``; returns per-query and overall metrics. Raises ``ApiError``."""
    request = body if isinstance(body, EvaluateRequest) else parse_evaluate_request(body)
    if request.target is None:
        rank, target = _retrieve_ranking(workspace), {"kind": "retrieve"}
    else:
        rank, target = _view_ranking(workspace, request.target)
    qid = {query.index: str(query.index) for query in request.queries}
    rankings = {qid[query.index]: _distinct(rank(query))[:request.k] for query in request.queries}
    relevant = {qid[query.index]: query.relevant for query in request.queries}
    scores = score_rankings(relevant, rankings, request.k)
    unknown = _unknown_records(workspace, {record_id for query in request.queries for record_id in query.relevant})
    queries = []
    for query in request.queries:
        ranking = rankings[qid[query.index]]
        found = [record_id for record_id in ranking if query.relevant.get(record_id, 0) >= 1]
        queries.append({"index": query.index, "id": query.id, "query": query.query, "metrics": scores[qid[query.index]],
                        "ranking": ranking, "relevantRetrieved": found,
                        "relevantTotal": sum(1 for grade in query.relevant.values() if grade >= 1),
                        "unknownRelevant": sorted(record_id for record_id in query.relevant if record_id in unknown)})
    count = len(queries)
    overall = {"queries": count,
               "recall": sum(q["metrics"]["recall"] for q in queries) / count,
               "ndcg": sum(q["metrics"]["ndcg"] for q in queries) / count,
               "mrr": sum(q["metrics"]["rr"] for q in queries) / count}
    return {"target": target, "k": request.k, "measures": measure_names(request.k), "overall": overall,
            "queries": queries}


def measure_names(k: int) -> dict:
    return {name: str(measure) for name, measure in _measures(k).items()}


def _measures(k: int) -> dict:
    return {"recall": R @ k, "ndcg": nDCG @ k, "rr": RR @ k}


def score_rankings(relevant: Mapping[str, Mapping[str, int]], rankings: Mapping[str, list[str]],
                   k: int) -> dict[str, dict[str, float]]:
    """``{query id: {recall, ndcg, rr}}`` for the graded ``relevant`` records and the ``rankings``
    (best first, at most ``k`` ids each) computed by ir-measures; 0 for an empty ranking."""
    measures = _measures(k)
    by_measure = {measure: name for name, measure in measures.items()}
    qrels = [Qrel(qid, record_id, grade) for qid, grades in relevant.items() for record_id, grade in grades.items()]
    run = [ScoredDoc(qid, record_id, float(len(ranking) - position))
           for qid, ranking in rankings.items() for position, record_id in enumerate(ranking)]
    values = {qid: {name: 0.0 for name in METRICS} for qid in relevant}
    for metric in ir_measures.iter_calc(list(measures.values()), qrels, run):
        values[metric.query_id][by_measure[metric.measure]] = float(metric.value)
    return values


def _retrieve_ranking(workspace):
    def rank(query: EvalQuery) -> list[str]:
        return retrieve(workspace=workspace, request=query.retrieve, side_effects=False)["ranking"]

    return rank


def _view_ranking(workspace, target: ViewTarget):
    catalog = catalog_for_workspace(workspace)
    definition = view_definition(catalog, target.name, path="target.view")
    view = definition.value
    names = [parameter.name for parameter in view.parameters]
    if target.query_parameter not in names:
        raise ApiError("view_parameter", f"view {view.name} has no parameter {target.query_parameter!r} to take the "
                       f"query text; it takes: {', '.join(names) or 'none'}", path="target.queryParameter")

    def rank(query: EvalQuery) -> list[str]:
        values = {**query.parameters, target.query_parameter: query.query}
        parameters = bind_parameters(view.parameters, values, path=f"queries[{query.index}].parameters")
        try:
            run = view_run(workspace=workspace, catalog=catalog, view=view, parameters=parameters, wrapper={},
                           invalid=f"queries[{query.index}]: the filled view query is invalid")
        except QueryTooLong as error:
            raise error.relocated(f"queries[{query.index}].query") from None
        return run.hit_ids

    return rank, {"kind": "view", "view": {"name": view.name, "version": view.version, "hash": definition.hash},
                  "queryParameter": target.query_parameter}


def _distinct(ids: list[str]) -> list[str]:
    """Canonical UUID strings, first occurrence kept (a ranking names each record once)."""
    out: dict[str, None] = {}
    for value in ids:
        try:
            out.setdefault(str(uuid.UUID(str(value))), None)
        except ValueError:
            out.setdefault(str(value), None)
    return list(out)


def _unknown_records(workspace, record_ids: set[str]) -> set[str]:
    """The ids that name no record of ``workspace`` (a typo, or another workspace's record)."""
    if not record_ids:
        return set()
    known = {str(pk) for pk in Record.objects.filter(workspace=workspace, pk__in=list(record_ids))
             .values_list("pk", flat=True)}
    return record_ids - known
