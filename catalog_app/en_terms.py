"""Tokenisation for stemmed English BM25 (the ``en_v1`` analyzer): bm25s's English analysis.

Text is lowercased and split into ``\\w\\w+`` tokens (regular expression ``(?u)\\b\\w\\w+\\b``,
so one-character tokens are dropped and ``_`` is a word character), the 33 words of
``EN_STOPWORDS`` are removed, and each remaining token is stemmed by Snowball's ``english``
stemmer (PyStemmer). That is exactly what ``bm25s.tokenize(texts, stopwords="en",
stemmer=Stemmer.Stemmer("english"))`` produces (a test holds both equal). Stored per record as
term frequencies and a length (the tokens left after stopword removal) at write time, like
``bm25_v1``'s (``catalog_app.bm25_terms``), so the index and the scans read them back.
"""
from __future__ import annotations

import re
import threading
from collections import Counter

import Stemmer

# bm25s's ``en`` stopword list, owned here (tests/catalog_app/test_en_terms.py holds it equal).
EN_STOPWORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not",
    "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was",
    "will", "with"))
STEMMER = "english"  # Snowball's English (Porter 2) stemmer, by PyStemmer's name
_TOKEN = re.compile(r"(?u)\b\w\w+\b")
# A PyStemmer stemmer is not safe to share between threads (the search runs channels on threads).
_local = threading.local()


def _stemmer() -> Stemmer.Stemmer:
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = Stemmer.Stemmer(STEMMER)
    return stemmer


def en_tokens(text: str) -> list[str]:
    """Every stemmed term of ``text`` in order (duplicates kept), stopwords removed."""
    return _stemmer().stemWords([token for token in _TOKEN.findall(text.lower()) if token not in EN_STOPWORDS])


def en_query_terms(text: str) -> list[str]:
    """The distinct ``en_v1`` terms of a query, in first-seen order."""
    return list(dict.fromkeys(en_tokens(text)))


def en_term_frequencies(text: str) -> tuple[dict[str, int], int]:
    """``({term: count}, length)`` of ``text`` under ``en_v1``; length counts every term."""
    tokens = en_tokens(text)
    return dict(Counter(tokens)), len(tokens)
