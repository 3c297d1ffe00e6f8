"""A recording ``Trace`` for the trace-hook tests: every stage's entry and exit in one sequence,
the thread it ran on, the statements run inside it on that thread, and what stages produced."""
import itertools
import threading
from contextlib import contextmanager

from django.db import connection

from search_app.engine.trace import Trace


class RecordingTrace(Trace):
    def __init__(self, vectors: dict | None = None):
        self.stages: list[dict] = []
        self.produced_items: list[tuple[str, object, list]] = []
        self.vectors = vectors or {}
        self.lock = threading.Lock()
        self.clock = itertools.count()

    @contextmanager
    def stage(self, name, source=None):
        entry = {"name": name, "source": getattr(getattr(source, "source", None), "name", None),
                 "thread": threading.get_ident(), "statements": [], "enter": next(self.clock)}

        def wrapper(execute, sql, params, many, context):
            entry["statements"].append(sql)
            return execute(sql, params, many, context)

        with connection.execute_wrapper(wrapper):
            yield
        entry["exit"] = next(self.clock)
        with self.lock:
            self.stages.append(entry)

    def produced(self, name, items, source=None):
        with self.lock:
            self.produced_items.append((name, getattr(getattr(source, "source", None), "name", None), list(items)))

    def query_vector(self, text):
        return self.vectors.get(text)

    def named(self, name: str, source: str | None = None) -> list[dict]:
        return [s for s in self.stages if s["name"] == name and (source is None or s["source"] == source)]

    def one(self, name: str, source: str | None = None) -> dict:
        (entry,) = self.named(name, source)
        return entry

    def order(self, names) -> list[str]:
        """The stages among ``names`` in the order they were entered."""
        return [s["name"] for s in sorted(self.stages, key=lambda s: s["enter"]) if s["name"] in names]


def inside(inner: dict, outer: dict) -> bool:
    return outer["enter"] < inner["enter"] and inner["exit"] < outer["exit"]
