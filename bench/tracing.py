"""Pieces both instrumented benches (``search.py``, ``retrieve.py``) pass as ``trace=``
(``search_app.engine.trace``): query vectors from a dict, and the base of an instrument that
takes its query vectors from such a cache so traced calls skip the model too."""
from __future__ import annotations

from search_app.engine.trace import Trace


class VectorCache(Trace):
    """Query vectors from a dict (``Trace.query_vector``); a text not in it is embedded as usual
    and counted as a miss."""

    def __init__(self, vectors: dict[str, list[float]]):
        self.vectors, self.misses = vectors, 0

    def query_vector(self, text: str):
        vector = self.vectors.get(text)
        if vector is None:
            self.misses += 1
        return vector


class Cached(Trace):
    """An instrument that takes its query vectors from ``cache``, so traced calls skip the model too."""

    def __init__(self, cache: VectorCache):
        self.cache = cache

    def query_vector(self, text: str):
        return self.cache.query_vector(text)
