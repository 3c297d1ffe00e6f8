"""Exact BM25 top-k over posting arrays, with MaxScore pruning.

Pure numpy over float8 values, no database. Every score is computed exactly as the full-scan
oracle computes it (``search_app.engine.bm25``, and its SQL in ``search_app.backends.pg_bm25``):
each term's contribution ``idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / average))``
with the operations in that order, summed over the query terms in query order (a term a record
lacks adds 0.0, which changes no float). Equal inputs therefore give bit-identical scores, and
the ranking (score descending, then UUID ascending) is the oracle's.

Pruning (MaxScore). ``bound`` is a valid upper bound of each term's contribution (its value at
the largest tf and the smallest length of the term's postings in scope). Terms are
taken in decreasing bound order; after each, the k-th best *partial* score is a lower bound
``theta`` of the k-th best full score (contributions are non-negative). Once the bounds of the
terms not yet taken sum to less than ``theta``, a record in none of the taken terms' postings
cannot reach the top k (nor tie with it), so only the taken terms' records whose partial score
plus that remainder still reaches ``theta`` are scored in full. Comparisons keep a relative
margin far above float8 rounding, so pruning never drops a record the exact order would keep.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

K1 = 1.2
B = 0.75
_MARGIN = 1e-9  # relative slack of every pruning comparison: rounding is ~1e-16


def idf(n: int, df: int) -> float:
    """The page's positive idf, as ``search_app.engine.bm25.idf`` computes it."""
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def contribution(term_idf: float, tf, length, average: float):
    """One term's contribution (scalars or arrays), in the oracle's operation order."""
    return term_idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))


@dataclass(frozen=True, slots=True)
class TermPostings:
    """One query term's postings in scope: ``seqs`` ascending, with ``tfs`` and ``lengths``."""

    seqs: np.ndarray  # int64
    tfs: np.ndarray  # float64
    lengths: np.ndarray  # float64
    idf: float
    bound: float  # >= every contribution of this term in scope


def sorted_union(arrays: list[np.ndarray]) -> np.ndarray:
    """The distinct values of ascending int64 arrays, ascending (a sort, not numpy's hashing
    ``unique``, which is several times slower on posting lists)."""
    arrays = [a for a in arrays if a.size]
    if not arrays:
        return np.empty(0, np.int64)
    if len(arrays) == 1:
        return arrays[0]
    merged = np.sort(np.concatenate(arrays), kind="stable")
    keep = np.empty(merged.size, bool)
    keep[0] = True
    np.not_equal(merged[1:], merged[:-1], out=keep[1:])
    return merged[keep]


def union_size(postings: list[TermPostings]) -> int:
    """How many distinct records the terms' postings hold."""
    return int(sorted_union([p.seqs for p in postings]).size)


def _lookup(p: TermPostings, seqs: np.ndarray, average: float) -> np.ndarray:
    """The term's contribution for each of ``seqs`` (0.0 where it has no posting)."""
    out = np.zeros(seqs.size)
    if p.seqs.size == 0 or seqs.size == 0:
        return out
    at = np.minimum(np.searchsorted(p.seqs, seqs), p.seqs.size - 1)
    hit = p.seqs[at] == seqs
    out[hit] = contribution(p.idf, p.tfs[at[hit]], p.lengths[at[hit]], average)
    return out


def _kth(values: np.ndarray, k: int) -> float:
    if values.size < k:
        return -math.inf
    return float(np.partition(values, values.size - k)[values.size - k])


def top_candidates(postings: list[TermPostings], k: int, average: float) -> tuple[np.ndarray, np.ndarray, int]:
    """The records that may be in the exact top ``k``, with their exact scores: every record
    whose score is at least the k-th best is among them. Returns (seqs, scores, records scored
    in full)."""
    if k <= 0 or average <= 0 or not any(p.seqs.size for p in postings):
        return np.empty(0, np.int64), np.empty(0), 0
    order = sorted(range(len(postings)), key=lambda i: -postings[i].bound)
    remaining = sum(p.bound for p in postings)
    seen = np.empty(0, np.int64)
    partial = np.empty(0)
    theta = -math.inf
    for taken, i in enumerate(order):
        p = postings[i]
        remaining -= p.bound
        if p.seqs.size:
            merged = sorted_union([seen, p.seqs])
            grown = np.zeros(merged.size)
            if seen.size:
                grown[np.searchsorted(merged, seen)] = partial
            grown[np.searchsorted(merged, p.seqs)] += contribution(p.idf, p.tfs, p.lengths, average)
            seen, partial = merged, grown
            theta = _kth(partial, k)
        if remaining * (1 + _MARGIN) < theta * (1 - _MARGIN) or taken == len(order) - 1:
            break
    if theta > -math.inf:
        keep = (partial + remaining) * (1 + _MARGIN) >= theta * (1 - _MARGIN)
        seen = seen[keep]
    scores = np.zeros(seen.size)
    for p in postings:  # query order, as the oracle sums
        scores = scores + _lookup(p, seen, average)
    return seen, scores, int(seen.size)


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
