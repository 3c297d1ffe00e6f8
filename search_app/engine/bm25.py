"""Exact BM25 (``bm25_v1`` of lexical-search.md): the statistics a score reads.

Statistics come from the search's own scope and typed filters: N (the records in scope), df of
each query term and the average length. The candidate channel counts them and scores the
records in the same statement, reading each record's term frequencies once. Scores use the
fixed formula of ``catalog_app.bm25_formula`` (its one home: constants, idf, each term's
contribution and their SQL forms).

Term frequencies and lengths are stored per record at write time (``catalog_app.bm25_terms``),
so SQL computes the same score for candidates and for the canonical reload. The ``bm25_en``
signal is the same formula over the stemmed English terms of ``en_v1``
(``catalog_app.en_terms``), stored the same way.
"""
from __future__ import annotations

from dataclasses import dataclass

from catalog_app.bm25_formula import idf

# The rank signals that are exact BM25, and the analyzer whose terms each one scores.
LEXICAL_SIGNALS = {"bm25": "bm25_v1", "bm25_en": "en_v1"}


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
