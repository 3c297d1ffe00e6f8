"""The documentation's code examples: every fenced block of ``README.md`` and ``docs/**/*.md``,
which of them run, and running them against a live server.

A fence must carry an info string. ``bash``, ``sh`` and ``python`` blocks run unless the line
just above the fence (blank lines aside) is ``<!-- docs-example: not run (why) -->`` with a
reason; every other language (``text``, ``json``, ``yaml``, ``sql``) is configuration or output
and never runs. Shell blocks run in ``bash`` with ``set -euo pipefail`` and a ``curl`` that fails
on an HTTP error (``--fail-with-body``), in the repository root, with ``KEY`` holding the live
workspace's key, ``python`` the test's interpreter and ``DATABASE_URL`` the live database (so
``manage.py`` commands act on what the server serves). Python blocks of one page run in order in
one namespace holding ``KEY``. In both, ``http://127.0.0.1:8000`` (quickstart's address) becomes
the live server's.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART_URL = "http://127.0.0.1:8000"
RUN_LANGUAGES = {"bash": "shell", "sh": "shell", "python": "python"}
NOT_RUN = re.compile(r"^<!-- docs-example: not run \((?P<reason>[^)]+)\) -->$")
FENCE = re.compile(r"^(?P<fence>```+|~~~+)(?P<info>.*)$")
SHELL_PRELUDE = ('set -euo pipefail\n'
                 'curl() { command curl --silent --show-error --fail-with-body "$@" && echo; }\n')


class ExampleFormatError(ValueError):
    """A fence without an info string, or a not-run marker without a reason or a block under it."""


@dataclass(frozen=True)
class Example:
    page: str          # path from the repository root
    line: int          # 1-based line of the opening fence
    language: str      # the fence's info string's first word
    code: str
    not_run: str | None  # the marker's reason, None when the block runs

    @property
    def runs(self) -> bool:
        return self.language in RUN_LANGUAGES and self.not_run is None


def pages() -> list[str]:
    """README.md and every Markdown page under docs/ (not the bench results linked into it)."""
    found = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "docs").rglob("*.md")
                   if "bench-results" not in path.relative_to(ROOT / "docs").parts)
    return ["README.md", *found]


def examples_parse(page: str, text: str) -> list[Example]:
    """Every fenced block of ``text`` (top-level fences: not inside a list item's indentation)."""
    lines = text.split("\n")
    found: list[Example] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            if lines[index].startswith("<!-- docs-example"):
                following = next((line for line in lines[index + 1:] if line.strip()), "")
                if not NOT_RUN.match(lines[index]) or not FENCE.match(following):
                    raise ExampleFormatError(f"{page}:{index + 1}: a docs-example marker is "
                                             "'<!-- docs-example: not run (why) -->' just above a fence")
            index += 1
            continue
        info = opening["info"].strip()
        if not info:
            raise ExampleFormatError(f"{page}:{index + 1}: a fence needs an info string (bash, python, text, ...)")
        closing = next((end for end in range(index + 1, len(lines))
                        if lines[end].startswith(opening["fence"]) and not lines[end].strip("`~")), None)
        if closing is None:
            raise ExampleFormatError(f"{page}:{index + 1}: the fence is never closed")
        above = next((line for line in reversed(lines[:index]) if line.strip()), "")
        marker = NOT_RUN.match(above)
        found.append(Example(page, index + 1, info.split()[0], "\n".join(lines[index + 1:closing]) + "\n",
                             marker["reason"] if marker else None))
        index = closing + 1
    return found


def examples_of(page: str) -> list[Example]:
    return examples_parse(page, (ROOT / page).read_text())


def shell_run(example: Example, url: str, env: dict) -> str:
    """Run a shell example; returns its standard output, raises AssertionError on failure."""
    code = example.code.replace(QUICKSTART_URL, url)
    environment = {**env, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"}
    done = subprocess.run(["bash", "-c", SHELL_PRELUDE + code], cwd=ROOT, env=environment,
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, (f"{example.page}:{example.line} exited {done.returncode}\n{code}\n"
                                  f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}")
    return done.stdout


def python_run(example: Example, url: str, namespace: dict) -> str:
    """Run a Python example in ``namespace``; returns what it printed."""
    code = example.code.replace(QUICKSTART_URL, url)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, f"{example.page}:{example.line}", "exec"), namespace)  # noqa: S102 (the docs' own code)
    return printed.getvalue()


def page_run(page: str, url: str, key: str, env: dict) -> list[tuple[Example, str]]:
    """Run every example of ``page`` that runs, in order; returns each with its output."""
    namespace: dict = {"KEY": key, "__name__": "docs_example"}
    outputs = []
    for example in examples_of(page):
        if not example.runs:
            continue
        if RUN_LANGUAGES[example.language] == "shell":
            outputs.append((example, shell_run(example, url, {**env, "KEY": key})))
        else:
            outputs.append((example, python_run(example, url, namespace)))
    return outputs
