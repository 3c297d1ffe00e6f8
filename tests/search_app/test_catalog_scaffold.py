"""``manage.py new_catalog``: a catalog that loads straight away and ranks with the example
catalog's measured default (copied from that one file), and refuses to overwrite a directory
by accident."""
from __future__ import annotations

import io

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError

from search_app.catalog_families import default_rank_body
from search_app.catalog_scaffold import RANK_FILE, TEMPLATE, example_rank_default
from tests.conftest import EXAMPLE_CATALOG

SCAFFOLD_FILES = ["README.md", "collections/notes.yaml", "conf/processors.yaml", "conf/rank_default.yaml"]


def new_catalog(directory, **options) -> str:
    out = io.StringIO()
    call_command("new_catalog", str(directory), stdout=out, **options)
    return out.getvalue()


def files_under(directory) -> list[str]:
    return sorted(path.relative_to(directory).as_posix() for path in directory.rglob("*") if path.is_file())


def test_the_scaffolds_rank_default_is_the_example_catalogs(tmp_path):
    out = new_catalog(tmp_path / "fresh")
    assert files_under(tmp_path / "fresh") == SCAFFOLD_FILES
    assert f"wrote {tmp_path / 'fresh' / RANK_FILE}" in out.splitlines()
    assert example_rank_default() == EXAMPLE_CATALOG / RANK_FILE
    written = yaml.safe_load((tmp_path / "fresh" / RANK_FILE).read_text())
    assert written == yaml.safe_load((EXAMPLE_CATALOG / RANK_FILE).read_text())
    assert written["variants"]["hybrid"] != default_rank_body()["variants"]["hybrid"]
    # The one source: no rank default among the templates that could drift from the example's.
    assert not (TEMPLATE / RANK_FILE).exists()


@pytest.mark.model
def test_a_new_catalog_loads_and_searches_with_the_measured_default(tmp_path, api, workspace, settings):
    from tests.search_app.search_factories import ingest_ready, item

    directory = tmp_path / "mine"
    new_catalog(directory)
    out, err = io.StringIO(), io.StringIO()
    call_command("load_catalog", str(directory), workspace=workspace.name, stdout=out, stderr=err)
    assert [line.split() for line in out.getvalue().splitlines()] == [
        ["add", "processor", "embedding_v1@1"], ["add", "rank_default", "rank_default@1"],
        ["add", "collection", "notes@1"], ["loaded", "3", "definition(s)", "into", workspace.name]]
    assert err.getvalue() == ""
    schema = api.get("/rank/schema").json()
    assert (schema["default_source"], schema["default_warning"], schema["bindings"]) == (
        "catalog", None, {"notes": "pg_default"})

    settings.MEMSEEK = {"TOUCH_ON_READ": False}
    texts = ["Maria confirmed the Q3 budget", "The Q3 budget review moved to Friday",
             "Budget budget budget: the offsite plan", "Replace the bicycle chain",
             "My cat sleeps on the warm windowsill"]
    ingest_ready(workspace, [item(text, collection="notes", type="event") for text in texts])
    got = api.get("/search?q=q3 budget review&collection=notes")
    assert got.status_code == 200, got.json()
    hits = [(hit["id"], hit["rank_score"]) for hit in got.json()["hits"]]

    def posted(rank: list) -> list:
        body = {"q": "q3 budget review", "mode": "hybrid", "scope": {"collections": ["notes"]}, "rank": rank}
        response = api.post("/search", body, format="json")
        assert response.status_code == 200, response.json()
        return [(hit["id"], hit["rank_score"]) for hit in response.json()["hits"]]

    def same(a: list, b: list) -> bool:  # the recency term moves with the clock
        return [i for i, _ in a] == [i for i, _ in b] and all(abs(x - y) < 1e-4 for (_, x), (_, y) in zip(a, b))

    example_hybrid = yaml.safe_load((EXAMPLE_CATALOG / RANK_FILE).read_text())["variants"]["hybrid"]
    assert len(hits) == 5
    assert same(hits, posted(example_hybrid))
    assert not same(hits, posted(default_rank_body()["variants"]["hybrid"]))


def test_an_existing_empty_directory_is_written_into(tmp_path):
    (tmp_path / "empty").mkdir()
    new_catalog(tmp_path / "empty")
    assert files_under(tmp_path / "empty") == SCAFFOLD_FILES


def test_a_non_empty_directory_is_refused_and_left_alone(tmp_path):
    directory = tmp_path / "taken"
    directory.mkdir()
    (directory / "notes.txt").write_text("mine")
    with pytest.raises(CommandError, match=r"is not empty; .*--force"):
        new_catalog(directory)
    assert files_under(directory) == ["notes.txt"]


def test_a_second_scaffold_into_the_same_directory_is_refused(tmp_path):
    new_catalog(tmp_path / "once")
    (tmp_path / "once" / RANK_FILE).write_text("candidates: 50\n")
    with pytest.raises(CommandError, match="is not empty"):
        new_catalog(tmp_path / "once")
    assert (tmp_path / "once" / RANK_FILE).read_text() == "candidates: 50\n"


def test_force_replaces_the_scaffolds_files_and_keeps_the_others(tmp_path):
    directory = tmp_path / "forced"
    (directory / "conf").mkdir(parents=True)
    (directory / "conf" / "rank_default.yaml").write_text("candidates: 50\n")
    (directory / "notes.txt").write_text("mine")
    new_catalog(directory, force=True)
    assert files_under(directory) == sorted([*SCAFFOLD_FILES, "notes.txt"])
    assert (directory / "notes.txt").read_text() == "mine"
    assert yaml.safe_load((directory / RANK_FILE).read_text()) == yaml.safe_load(
        (EXAMPLE_CATALOG / RANK_FILE).read_text())


def test_a_file_in_place_of_the_directory_is_refused_even_with_force(tmp_path):
    (tmp_path / "plain").write_text("not a directory")
    for force in (False, True):
        with pytest.raises(CommandError, match="is not a directory"):
            new_catalog(tmp_path / "plain", force=force)
    assert (tmp_path / "plain").read_text() == "not a directory"
