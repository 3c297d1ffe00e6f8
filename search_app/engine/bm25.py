"""Exact BM25 (``bm25_v1`` of lexical-search.md): the formula and the statistics a score reads.

Statistics come from the search's own scope and typed filters: N (the records in scope), df of
each query term and the average length. The candidate channel counts them and scores the
records in the same statement, reading each record's term frequencies once. Scores use the
fixed formula with k1 = 1.2 and b = 0.75:

    idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    score  = sum(idf(t) * tf(t) * 2.2 / (tf(t) + 1.2 * (0.25 + 0.75 * length / average_length)))

Term frequencies and lengths are stored per record at write time (``catalog_app.bm25_terms``),
so SQL computes the same score for candidates and for the canonical reload. The ``bm25_en``
signal is the same formula over the stemmed English terms of ``en_v1``
(``catalog_app.en_terms``), stored the same way.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

K1 = 1.2
B = 0.75
# The formula as lexical-search.md writes it, published in the ranking catalog (GET /rank/schema).
IDF_FORMULA = "idf(term) = ln(1 + (N - df(term) + 0.5) / (df(term) + 0.5))"
SCORE_FORMULA = ("score = sum(idf(term) * tf(term) * 2.2 / (tf(term) + 1.2 * (0.25 + 0.75 * length / "
                 "average_length)))")

# The rank signals that are exact BM25, and the analyzer whose terms each one scores.
LEXICAL_SIGNALS = {"bm25": "bm25_v1", "bm25_en": "en_v1"}


def idf(n: int, df: int) -> float:
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def bm25_term_score(tf: float, length: float, average_length: float, term_idf: float) -> float:
    """One term's contribution; the pure form of the backends' SQL expression."""
    return term_idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average_length))


@dataclass(frozen=True, slots=True)
class Bm25Stats:
    terms: tuple[str, ...]
    n: int
    average_length: float
    idf: tuple[float, ...]

    @property
    def usable(self) -> bool:
        return bool(self.terms) and self.n > 0 and self.average_length > 0


def bm25_stats(terms: tuple[str, ...], n, average, dfs) -> Bm25Stats:
    """Statistics of ``terms`` over ``n`` records of ``average`` length, each term's idf from its
    document frequency in ``dfs``."""
    n = int(n)
    return Bm25Stats(terms, n, float(average), tuple(idf(n, int(df)) for df in dfs))
