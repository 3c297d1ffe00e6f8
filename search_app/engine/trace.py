"""The trace hook of the search pipeline and of context retrieval: stage timings, statements.

``run_search`` (and the services around it), the candidate backends and ``retrieve`` take an
optional ``trace``; they wrap each stage's work in ``trace.stage(name)`` and report what a
stage proposed with ``trace.produced``. The default, ``NO_TRACE``, does nothing: its stage is one
shared context manager that does nothing, so an untraced request costs what it did before the
hook. A stage runs on the thread that does the work (backend channels and retrieval legs run on
``memseek_site.parallel``'s pool threads), so a trace may attach per-thread instruments (such as
``django.db.connection.execute_wrapper``) inside ``stage``. Stages of one request may run
concurrently, and several sources run the same stage names: ``source`` says whose work it is.

The stage names are a contract (benchmarks key their tables on them): ``SEARCH_STAGES`` and
``RETRIEVE_STAGES``. A stage may be skipped (a mode without a channel, a request without a
rerank) and may repeat (once per source, ``catalog lookup`` once to run and once to present).
"""
from __future__ import annotations

from contextlib import nullcontext
from typing import Any, ContextManager

SEARCH_STAGES = (
    "catalog lookup",   # the workspace's catalog (services; once to run, once to present)
    "parse",            # the SearchSpec body (search_run only)
    "resolve",          # sources against the catalog
    "query vector",     # the query embedded once (or taken from Trace.query_vector)
    "candidates",       # per source: the backend's candidate ids, its channels inside
    "channel vector", "channel text", "channel bm25", "channel bm25_en", "channel recent", "channel structured",
    "reload",           # per source: the canonical reload of the candidates
    "recheck",          # per source: the typed filters in Python
    "rank",             # per source: the rank expression over the survivors
    "order",            # per source: the scored rows sorted
    "structured order",  # per source: a structured source's order_by
    "rerank",           # per source: the model rerank
    "fuse",             # a combined search's fusion
    "finalize",         # public scores and the top-k cut
    "present",          # the response's hits and rendering
    "render",           # inside present: fitting rendered rows into the token budget
    "serialize",        # the response size check
)

RETRIEVE_STAGES = (
    "settings + catalog lookup",
    "scope",
    "query vector",
    "leg vector", "leg text", "leg policies", "leg policy drops",  # phase 1, concurrent
    "leg graph", "leg entity", "leg derivatives",                  # phase 2, concurrent
    "fuse", "reload", "score", "rerank", "compile",
    "receipt insert",
)

_NOTHING = nullcontext()


class Trace:
    """A trace that records nothing; subclass it to time stages or capture their statements."""

    def stage(self, name: str, source: Any = None) -> ContextManager:
        """A context manager around the work of stage ``name`` (one of ``SEARCH_STAGES`` or
        ``RETRIEVE_STAGES``), entered on the thread doing it; ``source`` is the resolved search
        source the work is for (None for request-wide stages and retrieval)."""
        return _NOTHING

    def produced(self, name: str, items, source: Any = None) -> None:
        """What stage ``name`` proposed: a source's candidate ids (``candidates``) or a leg's hits
        (each with an ``id``); called on the stage's thread right after it."""

    def query_vector(self, text: str) -> list[float] | None:
        """A vector computed beforehand for query ``text``, or None to embed it as usual (a
        benchmark times search without the model this way)."""
        return None


NO_TRACE = Trace()
