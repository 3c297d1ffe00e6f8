"""``explain: true``: why each entry was recalled, and how the whole call went.

Per entry (``explanation``): the legs that found it with their 1-based rank and raw score (and,
for structural legs, the strong match that led there as ``via``), its RRF fusion value and each
leg's contribution ``1 / (rank_constant + rank)``, the five factor values, normalised weights and
contributions, value-aware blending, the floor it was held to, the reranker's status and the
trust breakdown. Policy entries are not ranked: they carry only trust and say why.

Per call (``diagnostics``): candidates per leg, strong matches, fused and reloaded counts, drops
by reason (``policy``: records in scope the caller may not see that a query leg would have
proposed, as a count only; ``scope``: candidates that left the scope before the reload;
``floor``, ``topN``, ``budget``), the floor, the reranker and stage latencies in milliseconds.
"""
from __future__ import annotations

from .legs import LEGS, LegHit
from .candidate_scores import Floor, Scored


def entry_explanation(*, found: dict[str, tuple[int, LegHit]], rank_constant: int, fused_rank: int,
                      scored: Scored, floor: Floor | None, reranker: dict, trust: dict) -> dict:
    legs = {}
    contributions = {}
    for name in LEGS:
        if name not in found:
            continue
        rank, hit = found[name]
        legs[name] = {"rank": rank, "rawScore": hit.raw}
        if hit.via is not None:
            legs[name]["via"] = str(hit.via)
        contributions[name] = 1 / (rank_constant + rank)
    value_aware = {"enabled": scored.utility is not None}
    if scored.utility is not None:
        value_aware.update({"utility": scored.utility, "baseScore": scored.base})
    return {
        "legs": legs,
        "fusion": {"rrf": scored.candidate.rrf, "rank": fused_rank, "rankConstant": rank_constant,
                   "contributions": contributions},
        "factors": {name: {"value": f.value, "weight": f.weight, "contribution": f.contribution}
                    for name, f in scored.factors.items()},
        "valueAware": value_aware,
        "score": scored.score,
        "floor": {"applied": False, "reason": "raw"} if floor is None else
        {"applied": True, "threshold": floor.threshold, "passed": scored.score >= floor.threshold},
        "reranker": reranker,
        "trust": trust,
    }


def policy_explanation(trust: dict) -> dict:
    return {"legs": {}, "fusion": None, "factors": None, "valueAware": None, "score": None,
            "floor": {"applied": False, "reason": "policy records are always included when in scope"},
            "reranker": {"status": "not_applicable"}, "trust": trust}


def reranker_status(*, mode: str, requested: bool, judged: dict | None, before: int, after: int) -> dict:
    """One entry's reranker status; ``judged`` maps ids to judge scores when reranking ran."""
    if mode == "deterministic":
        return {"status": "disabled", "reason": "deterministic mode never reranks"}
    if not requested:
        return {"status": "not_requested"}
    status = {"positionBefore": before, "positionAfter": after}
    if judged is None:
        return {"status": "not_judged", **status}
    return {"status": "judged", "judgeScore": judged["score"], **status}


def diagnostics(*, candidates: dict[str, int], strong: int, fused: int, reloaded: int, drops: dict,
                floor: Floor | None, reranker: dict, latency: dict) -> dict:
    return {
        "candidates": {name: candidates.get(name, 0) for name in LEGS},
        "strongMatches": strong, "fused": fused, "reloaded": reloaded,
        "drops": drops,
        "floors": {"applied": False, "reason": "raw"} if floor is None else
        {"applied": True, "ratio": floor.ratio, "minimum": floor.minimum, "bestScore": floor.best,
         "threshold": floor.threshold},
        "reranker": reranker,
        "latencyMs": latency,
    }
