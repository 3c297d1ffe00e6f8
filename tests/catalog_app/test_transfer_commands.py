"""``manage.py export`` and ``manage.py import``: the same text as the route, resumable by
cursor, all-or-nothing imports that a second run leaves as they are, progress on standard error."""
from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from catalog_app.models import Definition, Record, Workspace
from catalog_app.services.workspaces import workspace_create
from tests.catalog_app.factories import record_make
from tests.catalog_app.transfer_support import export_text


@pytest.fixture
def seeded(catalog):
    first = record_make(catalog, entity="maria", text="Maria confirmed the budget")
    record_make(catalog, entity="maria", text="The review moves to Friday", derived_from=[first.id], depth=1)
    record_make(catalog, entity="bo", text="Bo books the hotel")
    return catalog


def run(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_export_writes_the_routes_text_with_a_progress_bar(api, seeded, tmp_path):
    out, err = run("export", "--workspace", "acme")
    assert out == export_text(api)
    assert "export acme" in err and "3/3" in err
    run("export", "--workspace", "acme", "--entity", "bo", "--output", str(tmp_path / "bo.jsonl"))
    assert (tmp_path / "bo.jsonl").read_text() == export_text(api, entity="bo")


def test_an_interrupted_export_file_resumes_with_the_last_lines_cursor(api, seeded, tmp_path):
    full = export_text(api)
    cut = full.splitlines(keepends=True)[:-3]  # the last two records and the end line never arrived
    target = tmp_path / "export.jsonl"
    target.write_text("".join(cut))
    run("export", "--workspace", "acme", "--output", str(target), "--cursor", json.loads(cut[-1])["cursor"])
    assert target.read_text() == full


def test_import_writes_once_and_a_second_run_changes_nothing(api, seeded, tmp_path):
    source = tmp_path / "export.jsonl"
    source.write_text(export_text(api))
    fresh, _ = workspace_create(name="fresh")
    out, err = run("import", str(source), "--workspace", "fresh", "--ids", "remap")
    assert out.startswith("3 records added, 0 already there;") and "import into fresh" in err
    counts = (Record.objects.filter(workspace=fresh).count(), Definition.objects.filter(workspace=fresh).count(),
              Workspace.objects.get(pk=fresh.pk).catalog_revision)
    out, _ = run("import", str(source), "--workspace", "fresh", "--ids", "remap")
    assert out.startswith("0 records added, 3 already there; 0 definitions added")
    assert (Record.objects.filter(workspace=fresh).count(), Definition.objects.filter(workspace=fresh).count(),
            Workspace.objects.get(pk=fresh.pk).catalog_revision) == counts


def test_a_bad_line_stops_the_import_naming_it_and_writes_nothing(api, seeded, tmp_path):
    lines = export_text(api).splitlines(keepends=True)
    lines[-2] = lines[-2].replace('"status":"active"', '"status":"gone"')
    source = tmp_path / "export.jsonl"
    source.write_text("".join(lines))
    fresh, _ = workspace_create(name="fresh")
    with pytest.raises(CommandError, match=rf"nothing imported: request_schema: .*\(line {len(lines) - 1}, "
                                           rf"lines\[{len(lines) - 2}\]\.status\)"):
        run("import", str(source), "--workspace", "fresh", "--ids", "remap")
    assert Definition.objects.filter(workspace=fresh).count() == 0


@pytest.mark.parametrize(("args", "message"), [
    (("export", "--workspace", "nobody"), "workspace 'nobody' does not exist"),
    (("export", "--workspace", "acme", "--cursor", "later"), "is not an export cursor"),
    (("import", "/nonexistent/export.jsonl", "--workspace", "acme"), "is not a file"),
    (("import", "/dev/null", "--workspace", "nobody"), "workspace 'nobody' does not exist"),
])
def test_command_errors_say_what_to_fix(seeded, args, message):
    with pytest.raises(CommandError, match=message):
        run(*args)
