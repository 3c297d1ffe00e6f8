"""The documentation site builds without a warning, and its generated parts are current."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from memseek_site import openapi_page

ROOT = Path(__file__).resolve().parents[2]
MKDOCS = Path(sys.executable).parent / "mkdocs"


def test_mkdocs_build_strict(tmp_path):
    """``mkdocs build --strict``: a broken link or anchor, a nav entry without its page or any other
    warning fails it. The built site fetches nothing from elsewhere."""
    done = subprocess.run([str(MKDOCS), "build", "--strict", "--site-dir", str(tmp_path / "site")], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    site = tmp_path / "site"
    assert (site / "api" / "reference" / "index.html").exists()
    assert (site / "bench-results" / "scifact.png").exists()
    remote = [page.name for page in site.rglob("*.html")
              if 'src="http' in page.read_text() or 'rel="stylesheet" href="http' in page.read_text()]
    assert remote == []


def test_the_checked_in_openapi_document_and_reference_are_current():
    document = openapi_page.document_generate()
    assert openapi_page.DOCUMENT.read_text() == openapi_page.document_text(document), (
        "docs/openapi.json differs from the API; run python -m memseek_site.openapi_page")
    assert openapi_page.PAGE.read_text() == openapi_page.reference_markdown(document), (
        "docs/api/reference.md differs from docs/openapi.json; run python -m memseek_site.openapi_page")


def test_the_reference_page_names_every_operation_and_schema():
    document = openapi_page.document_generate()
    page = openapi_page.reference_markdown(document)
    for path, item in document["paths"].items():
        for method in openapi_page.METHODS:
            if method in item:
                assert f"### `{method.upper()} {path}`" in page
    for name in document["components"]["schemas"]:
        assert f"### {name} {{#schema-{name.lower()}}}" in page


def test_the_readme_fits_one_screen_and_keeps_its_two_commands():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    assert "python manage.py quickstart" in readme and "pip install -r requirements-dev.txt && pytest\n" in readme


def test_the_benchmarks_page_links_every_report_and_plot():
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    results = [path.name for path in (ROOT / "bench" / "results").iterdir() if path.suffix in (".md", ".png")]
    assert results and [name for name in results if f"(bench-results/{name})" not in page] == []
