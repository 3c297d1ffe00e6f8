"""The canonical recheck of a lexical page's hits against the record table, whichever path
found them: each hit must be a corpus row (visible, in scope, passing the filters) and its score
must be the one its own text gives under the page's statistics. A hit that fails either was
ranked from storage that disagrees with the records (a stale posting, corrupted stored term
frequencies), and the request fails with ``500 retrieval_inconsistency`` rather than answer
with it or drop it.
"""
from __future__ import annotations

import math

from django.db import connection

from catalog_app.bm25_formula import contribution, idf
from catalog_app.lexical.analyzers import analyzer_get
from catalog_app.record_sql import RECORD
from memseek_site.errors import ApiError

from .corpus import LexicalCorpus
from .request import LexicalRequest
from .scan import LexicalPage


class LexicalInconsistency(ApiError):
    """Stored rows disagree with each other: the request fails rather than drop or misrank a hit."""


def recheck_hits(corpus: LexicalCorpus, request: LexicalRequest, page: LexicalPage) -> None:
    """Raise ``LexicalInconsistency`` unless every hit of ``page`` is a corpus row scoring
    (relative 1e-9) what its text scores under ``page``'s N, average length and dfs."""
    if not page.hits:
        return
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT r.id, r.text FROM {RECORD} r WHERE r.id = ANY(%s) AND {corpus.corpus.sql}",
                       [[record_id for record_id, _ in page.hits], *corpus.corpus.params])
        texts = dict(cursor.fetchall())
    idfs = [idf(page.corpus, df) for df in page.dfs]
    for record_id, score in page.hits:
        if record_id not in texts:
            raise LexicalInconsistency("retrieval_inconsistency", f"hit {record_id} is not a visible record of this "
                                       "scope; the request failed rather than answer with it")
        counts, length = analyzer_get(request.analyzer).frequencies(texts[record_id])
        expected = sum(contribution(term_idf, counts[term], length, page.average_length)
                       for term, term_idf in zip(request.terms, idfs) if term in counts)
        if not math.isclose(score, expected, rel_tol=1e-9, abs_tol=1e-12):
            raise LexicalInconsistency("retrieval_inconsistency", f"hit {record_id} was scored {score} but its text "
                                       f"scores {expected}; stored term statistics disagree with the record, so "
                                       "the request failed rather than rank by them")
