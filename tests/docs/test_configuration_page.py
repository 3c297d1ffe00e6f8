"""docs/configuration.md states every deployment setting of ``memseek_site/conf.py`` with its
default, and every environment variable the service's code reads."""
from __future__ import annotations

import re
from pathlib import Path

from memseek_site.conf import DEFAULTS

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "configuration.md").read_text()
PACKAGES = ("memseek_site", "catalog_app", "search_app", "retrieval_app")


def _rows() -> dict[str, str]:
    """Each table row's names (the backticked upper-case words of its first cell) mapped to the
    default the second cell gives that name."""
    stated = {}
    for line in PAGE.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not line.startswith("| `"):
            continue
        names = re.findall(r"`([A-Z][A-Z0-9_]+)`", cells[0])
        defaults = cells[1].split(", ") if len(names) > 1 else [cells[1]]
        for name, default in zip(names, defaults):
            stated[name] = default.strip("`")
    return stated


def _written(value) -> str:
    if value is True or value is False:
        return str(value).lower()
    if value == "":
        return "empty"
    return str(value)


def test_every_setting_is_documented_with_its_default():
    stated = _rows()
    missing = sorted(set(DEFAULTS) - set(stated))
    assert missing == []
    wrong = {name: (stated[name], DEFAULTS[name]) for name in DEFAULTS
             if stated[name].replace(",", "") != _written(DEFAULTS[name]).replace(",", "")}
    assert wrong == {}


def test_every_environment_variable_the_service_reads_is_documented():
    read = set()
    for package in PACKAGES:
        for source in (ROOT / package).rglob("*.py"):
            read |= set(re.findall(r"""environ(?:\.get)?[(\[]\s*["']([A-Z][A-Z0-9_]+)["']""", source.read_text()))
    assert read >= {"DATABASE_URL", "CELERY_BROKER_URL", "MEMSEEK_URL"}
    assert sorted(name for name in read if f"`{name}`" not in PAGE) == []
