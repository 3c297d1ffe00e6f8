"""Running one request's independent database work (search sources, retrieval legs) concurrently.

A process-wide pool of ``SEARCH_MAX_CONCURRENCY`` threads runs the tasks, so at most that many
run at once across all requests of the process. The threads live as long as the process, and
each keeps its own persistent database connection (``CONN_MAX_AGE``) instead of opening one per
task; before every task a connection that failed, aged out or fails its health check is replaced
(``close_old_connections``, as Django does between requests).

Tasks run one after another in the calling thread instead when there is only one, or inside a
transaction (other connections could not see its rows: tests, or a caller's atomic block).

A fan-out from inside a pool thread (a search source whose channels fan out again) offers its
tasks to the pool but never waits for one nobody has started: the calling thread runs the first
task, then claims and runs each of the others no pool thread has taken yet, and waits only for
those already running elsewhere. A running task never waits for an unstarted one, so even a
pool whose every thread is busy fanning out cannot deadlock; idle threads take their share.
"""
from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future

from django.db import close_old_connections, connection, connections

from . import deadline
from .conf import memseek_setting
from .replicas import carried_to_thread

_local = threading.local()
_pool: _Pool | None = None
_pool_lock = threading.Lock()


class _Pool:
    def __init__(self, size: int):
        self.size = size
        self.tasks: queue.SimpleQueue = queue.SimpleQueue()
        self.threads = [threading.Thread(target=self._work, name=f"memseek-parallel-{i}", daemon=True)
                        for i in range(size)]
        for thread in self.threads:
            thread.start()

    def _work(self) -> None:
        _local.in_pool = True
        while True:
            item = self.tasks.get()
            if item is None:
                connections.close_all()
                return
            future, task = item
            if not future.set_running_or_notify_cancel():
                continue
            close_old_connections()
            try:
                future.set_result(task())
            except BaseException as error:  # handed to the caller, who raises it
                future.set_exception(error)

    def submit(self, task: Callable[[], object]) -> Future:
        future: Future = Future()
        self.tasks.put((future, _in_callers_context(task)))
        return future

    def stop(self) -> None:
        for _ in self.threads:
            self.tasks.put(None)
        for thread in self.threads:
            thread.join()


def run_all(tasks: Sequence[Callable[[], object]]) -> list:
    """Results of ``tasks`` in the order given, run concurrently when allowed (module doc). The
    first failure, in that order, is raised once every task has finished."""
    if len(tasks) <= 1 or connection.in_atomic_block:
        return [task() for task in tasks]
    tasks = [carried_to_thread(task) for task in tasks]  # on the server this request's reads use
    pool = _current_pool()
    if getattr(_local, "in_pool", False):
        claimables = [_Claimable(task) for task in tasks]
        for claimable in claimables[1:]:  # offered; the first runs here
            pool.submit(claimable.run)
        for claimable in claimables:  # each one no pool thread has taken yet
            claimable.run()
        futures = [claimable.future for claimable in claimables]
    else:
        futures = [pool.submit(task) for task in tasks]
    errors = [future.exception() for future in futures]
    for error in errors:
        if error is not None:
            raise error
    return [future.result() for future in futures]


class _Claimable:
    """A task run once, by whichever thread calls ``run`` first (a pool thread that picks it up,
    or the thread that offered it); ``future`` holds its outcome."""

    def __init__(self, task: Callable[[], object]):
        self.task, self.claim, self.future = task, threading.Lock(), Future()

    def run(self) -> None:
        if self.claim.acquire(blocking=False):
            self.future.set_running_or_notify_cancel()
            try:
                self.future.set_result(self.task())
            except BaseException as error:  # handed to the thread that offered it
                self.future.set_exception(error)


def _in_callers_context(task: Callable[[], object]) -> Callable[[], object]:
    """``task`` run in a copy of the submitting thread's context (its request's deadline,
    ``memseek_site.deadline``), on a connection that enforces that deadline."""
    context = contextvars.copy_context()

    def run():
        deadline.attach()
        return context.run(task)

    return run


def shutdown() -> None:
    """Stop the pool's threads, closing their connections (before a test database is dropped);
    the next ``run_all`` starts a new pool."""
    global _pool
    with _pool_lock:
        if _pool is not None:
            _pool.stop()
            _pool = None


def _current_pool() -> _Pool:
    global _pool
    size = memseek_setting("SEARCH_MAX_CONCURRENCY")
    with _pool_lock:
        if _pool is None or _pool.size != size:
            if _pool is not None:
                _pool.stop()
            _pool = _Pool(size)
        return _pool
