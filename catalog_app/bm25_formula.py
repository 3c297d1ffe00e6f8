"""The BM25 formula of ``bm25_v1`` (lexical-search.md), written once: the constants, idf, one
term's contribution, and the same two as SQL rendered from the same constants.

Every exact BM25 score in the project comes from here: the pure engine's statistics
(``search_app.engine.bm25``), the index's numpy scoring (``catalog_app.lexical.bm25_topk``), the
``pg`` backend's scan and reload (``search_app.backends.pg_bm25``) and the lexical route's scan
and recheck (``retrieval_app.lexical``). The SQL forms keep the Python operation order, so float8
arithmetic gives bit-identical scores and the index equals the scan.

Imports nothing (numpy arrays pass through ``contribution`` as they are), so the pure search
engine may import it.
"""
from __future__ import annotations

import math

K1 = 1.2
B = 0.75

# The formula as lexical-search.md writes it, published in the ranking catalog (GET /rank/schema).
IDF_FORMULA = "idf(term) = ln(1 + (N - df(term) + 0.5) / (df(term) + 0.5))"
SCORE_FORMULA = (f"score = sum(idf(term) * tf(term) * {K1 + 1} / (tf(term) + {K1} * ({1 - B} + {B} * length / "
                 "average_length)))")


def idf(n: int, df: int) -> float:
    """The positive idf of a term in ``df`` of ``n`` records."""
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def contribution(term_idf, tf, length, average):
    """One term's contribution to a record's score (scalars or numpy arrays): ``term_idf`` of the
    term, its frequency ``tf`` in the record, the record's ``length`` and the ``average`` length."""
    return term_idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))


def idf_sql(n: str, df: str) -> str:
    """``idf`` as a float8 SQL expression over the SQL expressions ``n`` and ``df``."""
    return f"ln(1 + ({n} - {df} + 0.5) / ({df} + 0.5))"


def contribution_sql(term_idf: str, tf: str, length: str, average: str) -> str:
    """``contribution`` as a SQL expression over SQL expressions (float8), in the same operation
    order."""
    return f"({term_idf} * {tf} * {K1 + 1} / ({tf} + {K1} * ({1 - B} + {B} * {length} / {average})))"
