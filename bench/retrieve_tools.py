"""Instrumentation of ``bench/retrieve.py``: the query-vector cache, the capture of the legs'
SQL, and stage timers around ``retrieve``'s helpers.

Every wrapper patches a name in ``retrieval_app.service`` (or ``search_app.pipeline``) for the
duration of a ``with`` block and restores it after, so the timed passes run unwrapped code.
"""
from __future__ import annotations

import threading
import time
from contextlib import ExitStack, contextmanager

LEGS = {"vector_leg": "vector", "text_leg": "text", "policy_rows": "policies", "graph_leg": "graph",
        "entity_leg": "entity", "derivatives_leg": "derivatives"}
WRAPPED = (("settings + catalog lookup", ("retrieval_settings", "catalog_for_workspace")),
           ("receipt INSERT", ("_store_receipt",)))


@contextmanager
def patched(module, name: str, replacement):
    real = getattr(module, name)
    setattr(module, name, replacement(real))
    try:
        yield
    finally:
        setattr(module, name, real)


class VectorCache:
    """Query vectors from a dict while installed (both /retrieve's and /search's embed_query)."""

    def __init__(self, vectors: dict):
        self.vectors, self.misses = vectors, 0

    def _cached(self, real):
        def cached(config, text, *, workspace_id):
            if text not in self.vectors:
                self.misses += 1
                self.vectors[text] = real(config, text, workspace_id=workspace_id)
            return self.vectors[text]
        return cached

    @contextmanager
    def installed(self):
        from retrieval_app import service
        from search_app import pipeline as run

        with patched(service, "embed_query", self._cached), patched(run, "embed_query", self._cached):
            yield self


class LegCapture:
    """Wraps the legs as ``retrieve`` calls them and records, per leg call, every statement it
    executes on its (thread's) connection and the ids it returned."""

    def __init__(self):
        self.calls: list[dict] = []
        self.lock = threading.Lock()

    def _wrap(self, leg: str):
        def wrap(real):
            def capturing(*args, **kwargs):
                from django.db import connection

                statements = []

                def wrapper(execute, sql, params, many, context):
                    statements.append((sql, list(params) if params is not None else None))
                    return execute(sql, params, many, context)

                with connection.execute_wrapper(wrapper):
                    result = real(*args, **kwargs)
                with self.lock:
                    self.calls.append({"leg": leg, "statements": statements,
                                       "ids": {str(getattr(item, "id", None)) for item in result}})
                return result
            return capturing
        return wrap

    @contextmanager
    def installed(self):
        from retrieval_app import service

        with ExitStack() as stack:
            for function, leg in LEGS.items():
                stack.enter_context(patched(service, function, self._wrap(leg)))
            yield self

    def take(self) -> list[dict]:
        with self.lock:
            calls, self.calls = self.calls, []
        order = list(LEGS.values())
        return sorted(calls, key=lambda call: order.index(call["leg"]))


class StageWrappers:
    """Times the settings/catalog lookup and the receipt INSERT inside ``retrieve``."""

    def __init__(self):
        self.spent: dict[str, float] = {}

    def _wrap(self, label: str):
        def wrap(real):
            def timed(*args, **kwargs):
                started = time.perf_counter()
                try:
                    return real(*args, **kwargs)
                finally:
                    self.spent[label] = self.spent.get(label, 0.0) + (time.perf_counter() - started) * 1000
            return timed
        return wrap

    @contextmanager
    def installed(self):
        from retrieval_app import service

        with ExitStack() as stack:
            for label, names in WRAPPED:
                for name in names:
                    stack.enter_context(patched(service, name, self._wrap(label)))
            yield self

    def take(self) -> dict:
        spent, self.spent = self.spent, {}
        return spent
