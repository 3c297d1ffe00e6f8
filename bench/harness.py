"""What every benchmark of ``bench/`` does the same way, in one place: its progress log, the
common options (``--out``, ``--seed``, the bench database and ``--drop``), the record of the run's
environment (machine, load average, versions, git commit), the same-run baseline's turn order,
and writing the result JSON and markdown report (and plot) then printing the report.

A benchmark keeps only what it measures. The environment's keys are the ones the reports, the
docs and ``tests/bench`` read: ``machine`` (``cores``, ``usable_cores``, ``memory_gib``, ``cpu``,
``platform``, ``load_average_at_start``, and ``load_average_at_end`` once :func:`publish` ran),
``versions`` (``python``, ``django``, ``postgres_server``, then what the benchmark names) and
``git`` (``commit``, ``branch``, ``dirty``, ``modified_tracked_files``).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"

T = TypeVar("T")


def log(message: str) -> None:
    """Progress and file names go to stderr; stdout carries the report."""
    print(message, file=sys.stderr, flush=True)


def now() -> str:
    """The run's ``started_at``: UTC, to the second."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# --------------------------------------------------------------------------------------------
# Options


def add_out_argument(parser: argparse.ArgumentParser, default: Path = RESULTS) -> None:
    parser.add_argument("--out", type=Path, default=default, help="results directory (default bench/results)")


def add_seed_argument(parser: argparse.ArgumentParser, default: int) -> None:
    parser.add_argument("--seed", type=int, default=default, help=f"random seed (default {default})")


def add_database_arguments(parser: argparse.ArgumentParser, *, database: str | None = None,
                           prefix: str | None = None) -> None:
    """``--database NAME`` (one bench database) or ``--database-prefix P`` (one per size), and
    ``--drop`` to delete it afterwards."""
    if database is not None:
        parser.add_argument("--database", default=database, help="the bench database (created if missing)")
    if prefix is not None:
        parser.add_argument("--database-prefix", default=prefix, help="bench databases are PREFIX_SIZE")
    parser.add_argument("--drop", action="store_true", help="drop the bench database afterwards")


# --------------------------------------------------------------------------------------------
# Environment


def command_output(args: list[str]) -> str:
    """A command's stdout run in the repository root, or "" when it cannot run."""
    try:
        return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def package_version(distribution: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def machine() -> dict:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        memory = None
    return {"cores": os.cpu_count(),
            "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
            "memory_gib": round(memory / 2**30, 1) if memory else None,
            "cpu": cpu or platform.processor(), "platform": platform.platform(),
            "load_average_at_start": load_average()}


def git_state() -> dict:
    dirty = [line[3:] for line in command_output(["git", "status", "--porcelain", "--untracked-files=no"]).splitlines()]
    return {"commit": command_output(["git", "rev-parse", "HEAD"]),
            "branch": command_output(["git", "rev-parse", "--abbrev-ref", "HEAD"]),
            "dirty": bool(dirty), "modified_tracked_files": dirty}


def environment(packages: dict[str, str] | None = None, *, database: bool = True, torch: bool = True) -> dict:
    """The run's machine, versions and commit. ``packages`` maps a ``versions`` key to the
    distribution whose installed version it records; ``database`` adds the PostgreSQL server's
    version (Django must be set up), ``torch`` the torch version and this process's threads."""
    versions: dict[str, str | None] = {"python": platform.python_version()}
    env = {"machine": machine(), "versions": versions, "git": git_state()}
    if database:
        import django
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SHOW server_version")
            versions["django"] = django.get_version()
            versions["postgres_server"] = cursor.fetchone()[0]
    if torch:
        import torch as torch_

        env["machine"]["torch_threads"] = torch_.get_num_threads()
        versions["torch"] = torch_.__version__
    versions.update({key: package_version(distribution) for key, distribution in (packages or {}).items()})
    return env


# --------------------------------------------------------------------------------------------
# The same-run baseline


def in_turn(calls: Sequence[T], index: int) -> Sequence[T]:
    """The measure and its baseline (or any set of calls timed back to back) in the order of turn
    ``index``: as given on even turns, reversed on odd ones, so neither always runs first (on a
    warm cache, or right after the other's garbage)."""
    return calls if index % 2 == 0 else calls[::-1]


def ratio(value: float, baseline: float) -> float:
    """``value`` over its same-run ``baseline`` (NaN when the baseline is 0)."""
    return value / baseline if baseline else float("nan")


# --------------------------------------------------------------------------------------------
# Results


@contextmanager
def figure(path: Path, rows: int = 1, columns: int = 1, **subplots) -> Iterator[tuple]:
    """A matplotlib figure (the Agg backend, no display) of ``rows`` x ``columns`` axes, laid out
    and saved to ``path`` when the block ends without an error, closed in any case. Yields
    ``(figure, axes)`` as ``plt.subplots`` returns them."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(rows, columns, **subplots)
    try:
        yield fig, axes
        fig.tight_layout()
        fig.savefig(path, dpi=110)
    finally:
        plt.close(fig)


def write_json(path: Path, payload: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False, default=str) + "\n")


def publish(payload: dict, *, out: Path, name: str, report: Callable[[dict], str],
            plot: Callable[[dict, Path], object] | None = None) -> str:
    """Finish a run: stamp the load average at the end into ``payload["environment"]["machine"]``
    (when there is one), write ``out/name.json``, ``out/name.md`` (``report(payload)``) and, with
    ``plot``, ``out/name.png``; print the report on stdout. Returns the report."""
    machine_ = payload.get("environment", {}).get("machine")
    if isinstance(machine_, dict):
        machine_["load_average_at_end"] = load_average()
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / f"{name}.json", payload)
    text = report(payload)
    (out / f"{name}.md").write_text(text)
    written = [out / f"{name}.json", out / f"{name}.md"]
    if plot is not None:
        plot(payload, out / f"{name}.png")
        written.append(out / f"{name}.png")
    print(text)
    log("wrote " + ", ".join(str(path) for path in written))
    return text
