"""Instrumentation of ``bench/retrieve.py`` through ``retrieve``'s trace hook
(``search_app.engine.trace``): the query-vector cache, the capture of the legs' SQL, and the
timers of the stages ``diagnostics.latencyMs`` does not report.

Each is a ``Trace`` the bench passes as ``trace=``; the timed passes pass the cache alone.
"""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager

from bench.tracing import Cached, VectorCache

# trace stage -> the leg's name in the bench's tables, in the order the report lists them
LEGS = {"leg vector": "vector", "leg text": "text", "leg policies": "policies", "leg graph": "graph",
        "leg entity": "entity", "leg derivatives": "derivatives"}
# (table label, trace stage)
WRAPPED = (("settings + catalog lookup", "settings + catalog lookup"), ("receipt INSERT", "receipt insert"))


class LegCapture(Cached):
    """Records, per leg call, every statement it executes on its (thread's) connection and the
    ids it returned."""

    def __init__(self, cache: VectorCache):
        super().__init__(cache)
        self.calls: list[dict] = []
        self.lock = threading.Lock()
        self.local = threading.local()

    @contextmanager
    def stage(self, name, source=None):
        if name not in LEGS:
            yield
            return
        from django.db import connection

        statements = []

        def wrapper(execute, sql, params, many, context):
            statements.append((sql, list(params) if params is not None else None))
            return execute(sql, params, many, context)

        with connection.execute_wrapper(wrapper):
            yield
        self.local.statements = statements

    def produced(self, name, items, source=None):
        if name in LEGS:
            with self.lock:
                self.calls.append({"leg": LEGS[name], "statements": self.local.statements,
                                   "ids": {str(getattr(item, "id", None)) for item in items}})

    def take(self) -> list[dict]:
        with self.lock:
            calls, self.calls = self.calls, []
        order = list(LEGS.values())
        return sorted(calls, key=lambda call: order.index(call["leg"]))


class StageWrappers(Cached):
    """Times the settings/catalog lookup and the receipt INSERT inside ``retrieve``."""

    def __init__(self, cache: VectorCache):
        super().__init__(cache)
        self.labels = {stage: label for label, stage in WRAPPED}
        self.spent: dict[str, float] = {}

    @contextmanager
    def stage(self, name, source=None):
        label = self.labels.get(name)
        started = time.perf_counter()
        try:
            yield
        finally:
            if label is not None:
                self.spent[label] = self.spent.get(label, 0.0) + (time.perf_counter() - started) * 1000

    def take(self) -> dict:
        spent, self.spent = self.spent, {}
        return spent
