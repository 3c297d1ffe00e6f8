"""Lexical search: ``POST /search/lexical`` (spec lexical-search.md)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .records import Record



@dataclass(frozen=True, slots=True, kw_only=True)
class LexicalHit:
    """The current record and its positive raw BM25 score (scores order hits within one page;
    they are not probabilities and do not compare across pages)."""

    record: Record
    score: float


@dataclass(frozen=True, slots=True, kw_only=True)
class LexicalPage:
    hits: tuple[LexicalHit, ...]
    matched_records: int
    corpus_records: int
    scanned_records: int
    scanned_bytes: int
    exhaustive: bool
    next_after: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class LexicalTiming:
    retrieval_micros: int


@dataclass(frozen=True, slots=True, kw_only=True)
class LexicalResponse:
    contract_version: int
    scope: Any
    mode: str
    ranking_version: str
    page: LexicalPage
    timing: LexicalTiming
