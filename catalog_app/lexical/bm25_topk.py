"""Exact BM25 top-k over posting arrays, with MaxScore pruning.

Pure numpy over float8 values, no database. Every score is computed exactly as the full-scan
oracle computes it (``search_app.backends.pg_bm25``): each term's contribution
``catalog_app.bm25_formula.contribution`` (the SQL's own form renders it, operations in the same
order), summed over the query terms in query order (a term a record
lacks adds 0.0, which changes no float). Equal inputs therefore give bit-identical scores, and
the ranking (score descending, then UUID ascending) is the oracle's.

Slots. Every record gets one position in a score array (``slots_of``): its seq minus the
lowest seq when the seqs are dense enough, else its rank among the distinct seqs; either way
summing the terms' contributions is one ``bincount`` into the array, whatever order the
postings come in (blocks, then rows).

Pruning (MaxScore). ``bound`` is a valid upper bound of each term's contribution (its value at
the largest tf and the smallest length of the term's postings in scope). A record's score is
at least each of its contributions, so the k-th best contribution of any one term is a lower
bound ``theta`` of the k-th best score, and so is that of any subset of its postings (the
first postings of the highest-bound terms are tried). Taking terms in
increasing bound order, those whose bounds together stay below ``theta`` are *non-essential*: a
record holding none of the other, essential terms cannot reach the top k (nor tie with it). So
only the records of the essential terms are scored in full, and a non-essential term's
postings are looked at only for them. Comparisons keep a relative margin far above float8
rounding, so pruning never drops a record the exact order would keep.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from catalog_app.bm25_formula import contribution
from catalog_app.bm25_formula import idf as idf  # the index's callers read both from here

_MARGIN = 1e-9  # relative slack of every pruning comparison: rounding is ~1e-16
_THETA_TERMS = 2  # the highest-bound terms whose k-th best contribution is tried as the threshold
_THETA_SAMPLE = 32_768  # of their first postings (any subset's k-th best is a valid threshold)


@dataclass(frozen=True, slots=True)
class TermPostings:
    """One query term's postings in scope: distinct ``seqs`` in any order, with ``tfs`` and
    ``lengths``."""

    seqs: np.ndarray  # int64
    tfs: np.ndarray  # float64
    lengths: np.ndarray  # float64
    idf: float
    bound: float  # >= every contribution of this term in scope


@dataclass(frozen=True, slots=True)
class Slots:
    """Each term's postings as positions in one score array of ``width``: ``seq - base`` when
    the seqs are dense enough (``values`` None), else the rank of the seq among the distinct
    seqs ``values``. Either way a record has one slot whatever term it comes from."""

    per_term: list[np.ndarray]
    width: int
    base: int
    values: np.ndarray | None

    def seqs(self, slots: np.ndarray) -> np.ndarray:
        return slots + self.base if self.values is None else self.values[slots]

    def matched(self) -> int:
        """How many distinct records the postings hold."""
        if self.values is not None:
            return int(self.values.size)
        seen = np.zeros(self.width, bool)
        for slots in self.per_term:
            seen[slots] = True
        return int(np.count_nonzero(seen))


DENSE_SPAN = 4  # a score array at most this many times the postings (plus DENSE_MIN) is indexed by seq
DENSE_MIN = 1 << 20


def _dense(low: int, high: int, values: int) -> bool:
    """Whether an array over seqs ``low`` to ``high`` is small enough for ``values`` values."""
    return high - low + 1 <= DENSE_SPAN * values + DENSE_MIN


def is_among(values: np.ndarray, of: np.ndarray) -> np.ndarray:
    """Whether each of the int64 ``values`` is one of ``of``, as ``np.isin``: by a lookup table
    over the span of ``values`` when that is dense enough (linear, where sorting the two
    arrays is not), else by ``np.isin``."""
    if not values.size or not of.size:
        return np.zeros(values.size, bool)
    low, high = int(values.min()), int(values.max())
    if not _dense(low, high, values.size + of.size):
        return np.isin(values, of)
    table = np.zeros(high - low + 1, bool)
    table[of[(of >= low) & (of <= high)] - low] = True
    return table[values - low]


def slots_of(postings: list[TermPostings]) -> Slots:
    """The slot of every posting (``Slots``)."""
    arrays = [p.seqs for p in postings]
    total = sum(a.size for a in arrays)
    if not total:
        return Slots([np.empty(0, np.int64) for _ in arrays], 0, 0, None)
    low = min(int(a.min()) for a in arrays if a.size)
    high = max(int(a.max()) for a in arrays if a.size)
    if _dense(low, high, total):
        return Slots([a - low for a in arrays], high - low + 1, low, None)
    merged = np.concatenate(arrays)
    order = np.argsort(merged, kind="stable")
    ordered = merged[order]
    fresh = np.empty(ordered.size, bool)
    fresh[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=fresh[1:])
    rank = np.empty(ordered.size, np.int64)
    rank[order] = np.cumsum(fresh) - 1
    cuts = np.cumsum([a.size for a in arrays])[:-1]
    return Slots(np.split(rank, cuts), int(np.count_nonzero(fresh)), 0, ordered[fresh])


def _kth(values: np.ndarray, k: int) -> float:
    if values.size < k:
        return -math.inf
    return float(np.partition(values, values.size - k)[values.size - k])


@dataclass(frozen=True, slots=True)
class Candidates:
    """The records that may be in the exact top k, with their exact scores, and the counts the
    answer reports."""

    seqs: np.ndarray
    scores: np.ndarray
    scored: int  # records scored in full (the others were pruned)
    matched: int  # records holding at least one term


def top_candidates(postings: list[TermPostings], slots: Slots, k: int, average: float) -> Candidates:
    """Every record whose score is at least the k-th best, with its exact score (``Candidates``)."""
    if k <= 0 or average <= 0 or not slots.width:
        return Candidates(np.empty(0, np.int64), np.empty(0), 0, slots.matched())
    contributions = [contribution(p.idf, p.tfs, p.lengths, average) for p in postings]
    order = sorted(range(len(postings)), key=lambda i: -postings[i].bound)
    # theta: a record's score is at least any one of its contributions (a float sum of positive
    # terms is at least each of them), so the k-th best contribution of one term is at most the
    # k-th best score. The rarest terms give the best.
    theta = max((_kth(contributions[i][:_THETA_SAMPLE], k) for i in order[:_THETA_TERMS]), default=-math.inf)
    essential = len(order)
    remaining = 0.0
    while essential > 1 and (remaining + postings[order[essential - 1]].bound) * (1 + _MARGIN) < theta * (1 - _MARGIN):
        essential -= 1
        remaining += postings[order[essential]].bound
    # Only a record holding an essential term can reach theta: the others' bounds sum below it.
    # Exact scores: every term's contributions summed in query order, as the oracle sums
    # (bincount adds its weights in array order); a non-essential term is looked at only for
    # the records holding an essential one, so the others score 0.
    parts = list(zip(slots.per_term, contributions))
    if essential < len(order):
        keep = np.zeros(slots.width, bool)
        for i in order[:essential]:
            keep[slots.per_term[i]] = True
        for i in order[essential:]:
            hit = keep[parts[i][0]]
            parts[i] = parts[i][0][hit], parts[i][1][hit]
        scored, matched = int(np.count_nonzero(keep)), slots.matched()
    scores = np.bincount(np.concatenate([at for at, _ in parts]), weights=np.concatenate([c for _, c in parts]),
                         minlength=slots.width)
    if essential == len(order):
        # Unpruned, every record holding a term has a positive score when every idf is positive.
        scored = matched = int(np.count_nonzero(scores)) if all(p.idf > 0 for p in postings) else slots.matched()
    # A top-k record scores at least theta; below it nothing is a candidate (nor, at 0, unscored).
    candidates = np.flatnonzero(scores >= theta * (1 - _MARGIN) if theta > 0 else scores > 0)
    return Candidates(slots.seqs(candidates), scores[candidates], scored, matched)


def best_k(seqs: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Split the candidates for the top ``k``: the seqs and scores of those scoring above the
    k-th best score (best first), the seqs of those tied at it (the caller fills ``k`` with the
    smallest UUIDs among them) and that score."""
    if seqs.size == 0:
        return seqs, scores, seqs, 0.0
    kth = _kth(scores, min(k, scores.size))
    above = scores > kth
    order = np.argsort(-scores[above], kind="stable")
    return seqs[above][order], scores[above][order], seqs[scores == kth], kth
