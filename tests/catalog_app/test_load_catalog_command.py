"""``manage.py load_catalog`` says when the loaded workspace is left on a built-in default that
its family warns about (the rank default: the engine's built-in hybrid formula)."""
from __future__ import annotations

import io
import shutil

from django.core.management import call_command

from search_app.catalog_families import BUILTIN_RANK_WARNING
from tests.conftest import EXAMPLE_CATALOG

RANK_FILE = "conf/rank_default.yaml"


def load(directory, workspace, **options) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("load_catalog", str(directory), workspace=workspace.name, stdout=out, stderr=err, **options)
    return out.getvalue(), err.getvalue()


def without_rank_default(tmp_path):
    directory = tmp_path / "catalog"
    shutil.copytree(EXAMPLE_CATALOG, directory)
    (directory / RANK_FILE).unlink()
    return directory


def test_a_catalog_with_a_rank_default_loads_without_a_warning(workspace):
    out, err = load(EXAMPLE_CATALOG, workspace)
    assert out.splitlines()[-1].startswith("loaded ")
    assert err == ""


def test_a_catalog_without_a_rank_default_warns_on_stderr(tmp_path, workspace):
    out, err = load(without_rank_default(tmp_path), workspace)
    assert out.splitlines()[-1].startswith("loaded ")
    assert err.splitlines() == [f"warning: {BUILTIN_RANK_WARNING}"]
    assert "warning" not in out


def test_a_dry_run_warns_too(tmp_path, workspace):
    _, err = load(without_rank_default(tmp_path), workspace, dry_run=True)
    assert err.splitlines() == [f"warning: {BUILTIN_RANK_WARNING}"]


def test_no_warning_once_an_earlier_load_published_a_rank_default(tmp_path, workspace):
    # The stored rank default stays active when a later catalog has no file for it.
    load(EXAMPLE_CATALOG, workspace)
    _, err = load(without_rank_default(tmp_path), workspace)
    assert err == ""
