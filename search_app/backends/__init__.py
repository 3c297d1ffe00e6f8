"""Candidate backends: where a search profile's records are indexed.

A backend proposes candidate ids for a search source and reloads them canonically, and proposes
context retrieval's vector and text matches under a retrieval scope; the search pipeline and
context retrieval's legs (``retrieval_backend``) reach the index only through this interface, so
the engine stays pure and another backend can stand beside ``pg``. A backend is any object with the
members of ``CandidateBackend`` (the ``pg`` backend is the module ``search_app.backends.pg``).
Every backend passes the shared contract tests (``tests/search_app/backend_contract.py``).
"""
from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Mapping
from typing import Protocol

from catalog_app.record_rows import CanonicalRow
from catalog_app.record_sql import Clause

from ..engine.bm25 import Bm25Stats
from ..engine.candidates import QueryContext, Reloaded
from ..engine.resolve import ResolvedSource
from ..engine.trace import NO_TRACE, Trace
from . import pg


class CandidateBackend(Protocol):
    """What the search pipeline asks of a backend.

    ``CAPABILITIES`` are the search modes it runs (``engine.profiles.BACKEND_CAPABILITIES``;
    hybrid needs vector and text). Proposals never widen a source's scope: every id a backend
    proposes or reloads satisfies the source's scope, and the reload re-applies it (an id out of
    scope reloads as None), so the pipeline's exact recheck is the only other filter."""

    NAME: str
    CAPABILITIES: tuple[str, ...]

    def candidate_ids(self, resolved: ResolvedSource, context: QueryContext, *, bm25: Collection[str] = (),
                      early_reload: Callable[[list[uuid.UUID]], Reloaded] | None = None,
                      trace: Trace = NO_TRACE) -> tuple[list[uuid.UUID], dict[str, Bm25Stats], Reloaded]:
        """At most ``resolved.source.candidate_cap()`` ids in the mode's proposal order; the BM25
        statistics of the source's scope for each exact-BM25 signal in ``bm25`` (``bm25``,
        ``bm25_en``: ``engine.bm25.LEXICAL_SIGNALS``), by signal; rows reloaded early by ``early_reload``.
        Each channel's query runs inside ``trace.stage("channel <name>", resolved)`` on the
        thread that issues it (``engine.trace.SEARCH_STAGES`` names the channels)."""

    def reload_rows(self, resolved: ResolvedSource, context: QueryContext, ids: list[uuid.UUID],
                    bm25: Mapping[str, Bm25Stats] | None = None, *, reads: frozenset[str], bodies: bool = True,
                    reloaded: Reloaded | None = None) -> list[CanonicalRow]:
        """The ids still in scope, in ``ids`` order, with the signals of ``reads`` recomputed."""

    def reload_by_id(self, resolved: ResolvedSource, context: QueryContext, ids: list[uuid.UUID],
                     bm25: Mapping[str, Bm25Stats] | None = None, *, reads: frozenset[str],
                     bodies: bool = True) -> Reloaded:
        """Every id of ``ids`` mapped to its canonical row, or None when out of scope."""

    def with_bodies(self, rows: list[CanonicalRow]) -> list[CanonicalRow]:
        """``rows`` with text and content filled in where a reload left them out."""

    # Context retrieval's legs (retrieval_app.legs): ``where`` is a condition over the record
    # table as ``r`` (the retrieval scope); a match is ``(id, raw score, key, entity)``.

    def vector_matches(self, where: Clause, workspace_id: int, vector: list[float], space: str, dimensions: int, *,
                       cap: int, min_similarity: float) -> list[tuple[uuid.UUID, float, str | None, str]]:
        """At most ``cap`` records of ``workspace_id`` under ``where`` nearest ``vector`` in
        ``space``, similarity >= ``min_similarity``, best first, then seq desc."""

    def text_matches(self, where: Clause, query: str, *,
                     cap: int) -> list[tuple[uuid.UUID, float, str | None, str]]:
        """At most ``cap`` records under ``where`` sharing an English lexeme with ``query``, best
        ``ts_rank_cd`` first, then seq desc."""

    def match_count(self, where: Clause, workspace_id: int, query: str, vector: tuple[list[float], str, int] | None,
                    *, min_similarity: float, cap: int) -> int:
        """How many distinct records ``text_matches`` and (given ``vector``: values, space,
        dimensions) ``vector_matches`` would propose under ``where``, at most ``cap`` of each."""


def backend_for(name: str) -> CandidateBackend:
    """The backend called ``name`` (a search profile's ``backend``). Raises ``KeyError`` for a
    backend this build does not have (resolve refuses such profiles before any search runs)."""
    return _BACKENDS[name]


def retrieval_backend() -> CandidateBackend:
    """The backend context retrieval's legs propose through: the record table's own indexes."""
    return _BACKENDS[pg.NAME]


_BACKENDS: dict[str, CandidateBackend] = {pg.NAME: pg}
