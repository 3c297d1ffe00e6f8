"""The soak's memory watch keeps one entry per long-lived process, one per pooled role (the
database's backends) with their count, and a coarse series rather than every sample."""
from __future__ import annotations

import os
import signal
import subprocess
import time

import psutil

from bench.soak_stack import MemoryWatch


def test_pooled_children_are_one_entry_and_the_series_is_coarse():
    parent = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30 & wait"], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while len(psutil.Process(parent.pid).children()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        watch = MemoryWatch(series_every_s=3600, pooled=("postgres child",))
        watch.watch("postgres", lambda: parent.pid)
        watch.watch("redis", lambda: None)  # down: not sampled
        for _ in range(3):
            watch.sample()
        entries = {entry["role"]: entry for entry in watch.stop()}
    finally:
        os.killpg(parent.pid, signal.SIGKILL)  # the shell and its two sleeps, a session of their own
        parent.wait()
    assert set(entries) == {"postgres main", "postgres child"}
    assert entries["postgres main"]["pid"] == parent.pid and entries["postgres main"]["samples"] == 3
    pooled = entries["postgres child"]
    assert pooled["processes"] == 2 and "pid" not in pooled and pooled["samples"] == 6
    assert pooled["peak_rss_mib"] > 0
    assert len(watch.series) == 1
    assert set(watch.series[0]["largest_rss_mib"]) == {"postgres main", "postgres child"}
