"""A new catalog directory (``manage.py new_catalog``) that starts with the measured rank default.

Invariant: the scaffold's ``conf/rank_default.yaml`` is the example catalog's, copied at write
time from that one file with a header of its own, so the two cannot drift; the other files are
the templates beside this module in ``scaffold/``.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from django.conf import settings

RANK_FILE = Path("conf") / "rank_default.yaml"
TEMPLATE = Path(__file__).resolve().parent / "scaffold"
RANK_HEADER = (
    "# Copied by `manage.py new_catalog` from the example catalog's conf/rank_default.yaml, the\n"
    "# measured default (docs/benchmarks.md). Without this file the workspace ranks with the engine's\n"
    "# built-in formula, and GET /rank/schema, load_catalog and the console warn about it.\n")


def example_rank_default() -> Path:
    """The example catalog's rank default: the one source the scaffold copies."""
    return Path(settings.BASE_DIR) / "fixtures" / "catalogs" / "example" / RANK_FILE


def catalog_scaffold_write(*, directory: Path) -> list[Path]:
    """Write the scaffold into ``directory`` (created with its parents when missing), replacing
    files of the same name and leaving any other file alone.

    Returns the written files, relative to ``directory``, in writing order. Whether an existing
    directory may be written into is the caller's decision.
    """
    written = []
    for source in sorted(path for path in TEMPLATE.rglob("*") if path.is_file()):
        relative = source.relative_to(TEMPLATE)
        (directory / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, directory / relative)
        written.append(relative)
    (directory / RANK_FILE).parent.mkdir(parents=True, exist_ok=True)
    (directory / RANK_FILE).write_text(RANK_HEADER + example_rank_default().read_text(encoding="utf-8"),
                                       encoding="utf-8")
    written.append(RANK_FILE)
    return written
