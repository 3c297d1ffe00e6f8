"""Tokenisation for exact BM25 (``bm25_v1`` of lexical-search.md): text is split on every
non-alphanumeric Unicode character and lowercased; no stemming, stopword removal or Unicode
normalisation. Stored per record as term frequencies and a length at write time, so search
can compute exact BM25 over any scope."""
from __future__ import annotations

import re
from collections import Counter

from memseek_site.conf import memseek_setting
from memseek_site.errors import ApiError

# One character of a term: a letter or a digit.
TERM_CHARACTER = r"[^\W_]"
_TERM = re.compile(TERM_CHARACTER + "+")


def bm25_tokens(text: str) -> list[str]:
    """Every term of ``text`` in order (duplicates kept): runs of letters and digits, lowercased."""
    return _TERM.findall(text.lower())


def query_terms_check(text: str, path: str) -> None:
    """Raise ``422 query_terms`` at ``path`` when ``text`` holds more than ``MAX_QUERY_TERMS``
    distinct terms (runs of letters and digits, lowercased: its ``bm25_v1`` terms) or ``en_v1``
    terms (``catalog_app.en_terms``); its English lexemes are at most twice as many). Every
    lexical statement reads one column per distinct term, and PostgreSQL holds at most 1,664 in
    a statement's target list, so the limit keeps a question's work bounded and every statement
    valid, however the text repeats itself."""
    from .en_terms import en_tokens  # en_v1's terms can outnumber them (``__`` is one, ``a_b`` joins two)

    limit = memseek_setting("MAX_QUERY_TERMS")
    count = max(len(set(bm25_tokens(text))), len(set(en_tokens(text))))
    if count > limit:
        raise ApiError("query_terms", f"{path} has {count} distinct terms (runs of letters and digits); at most "
                                      f"{limit} (MAX_QUERY_TERMS): ask with fewer words", path)


def bm25_query_terms(text: str) -> list[str]:
    """The distinct terms of a query, in first-seen order."""
    return list(dict.fromkeys(bm25_tokens(text)))


def term_frequencies(text: str) -> tuple[dict[str, int], int]:
    """``({term: count}, length)`` of ``text``; length counts every token."""
    tokens = bm25_tokens(text)
    return dict(Counter(tokens)), len(tokens)
