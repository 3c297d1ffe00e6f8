"""The worker start-up handler that shares the cores among a worker's pool processes."""
import os
from types import SimpleNamespace

import pytest

from catalog_app.signals import share_cores_among_pool_processes

CORES = len(os.sched_getaffinity(0))


@pytest.fixture
def no_thread_setting(monkeypatch):
    """OMP_NUM_THREADS unset, and whatever the handler sets undone afterwards (setenv first makes
    monkeypatch restore the original state)."""
    monkeypatch.setenv("OMP_NUM_THREADS", "")
    monkeypatch.delenv("OMP_NUM_THREADS")


@pytest.mark.parametrize("concurrency, expected", [
    (1, CORES),
    (CORES, 1),
    (CORES * 4, 1),  # never below one thread
])
def test_each_pool_process_gets_its_share_of_the_cores(no_thread_setting, concurrency, expected):
    share_cores_among_pool_processes(sender=SimpleNamespace(concurrency=concurrency))
    assert os.environ["OMP_NUM_THREADS"] == str(expected)


def test_an_explicit_thread_count_is_kept(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    share_cores_among_pool_processes(sender=SimpleNamespace(concurrency=CORES))
    assert os.environ["OMP_NUM_THREADS"] == "3"


@pytest.mark.parametrize("concurrency", ["auto", None, 0])
def test_an_unresolved_concurrency_changes_nothing(no_thread_setting, concurrency):
    share_cores_among_pool_processes(sender=SimpleNamespace(concurrency=concurrency))
    assert "OMP_NUM_THREADS" not in os.environ
