"""Every runnable code example of the README and the documentation site, run against a live
gunicorn on a scratch copy of quickstart's data (``manage.py quickstart --no-serve``: the example
catalog and the sample records in workspace ``demo``), with that workspace's key."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from bench.processes import Server
from memseek_client import MemseekClient
from tests.scratch_database import scratch_database

from .examples import ROOT, Example, ExampleFormatError, examples_of, examples_parse, page_run, pages

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def live():
    with scratch_database("docs_examples") as env:
        prepared = subprocess.run([sys.executable, "manage.py", "quickstart", "--no-serve"], cwd=ROOT, env=env,
                                  capture_output=True, text=True, timeout=600, check=False)
        assert prepared.returncode == 0, prepared.stdout + prepared.stderr
        key = re.search(r"API key \(shown once\):\s+(\S+)", prepared.stdout).group(1)
        server = Server(workers=1, env=env)
        try:
            yield f"http://127.0.0.1:{server.port}", key, env
        finally:
            server.stop()


@pytest.mark.parametrize("page", [page for page in pages() if any(e.runs for e in examples_of(page))])
def test_the_page_examples_run(live, page):
    url, key, env = live
    outputs = page_run(page, url, key, env)
    assert outputs, f"{page} has runnable examples but none ran"


def test_every_page_is_read_and_most_examples_run():
    """The collector sees the pages the site builds, and the not-run blocks stay the exception."""
    every = [example for page in pages() for example in examples_of(page)]
    assert {"README.md", "docs/index.md", "docs/api/lexical.md", "docs/api/python-sdk.md"} <= set(pages())
    runnable = [e for e in every if e.language in ("bash", "sh", "python")]
    running = [e for e in runnable if e.runs]
    assert len(running) >= 15 and len(running) > len(runnable) / 2, [
        f"{e.page}:{e.line} ({e.not_run})" for e in runnable if not e.runs]


def _json_documents(output: str) -> list[dict]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


def test_the_lexical_example_finds_the_sample_records(live):
    """The issue's finding: the lexical example used to return 0 hits on quickstart's data."""
    url, key, env = live
    [output] = [out for e, out in page_run("docs/api/lexical.md", url, key, env)
                           if "/search/lexical" in e.code]
    [answer] = _json_documents(output)
    hits = answer["page"]["hits"]
    assert hits and "Q3 budget" in hits[0]["record"]["content"]["text"], answer


def test_the_readme_example_finds_the_sample_records(live):
    url, key, env = live
    [(_, output)] = page_run("README.md", url, key, env)
    search, view, written = _json_documents(output)
    assert search["hits"] and view["hits"], (search, view)
    assert len(written["inserted"]) == 1


def test_the_sdk_examples_print_what_they_promise(live):
    url, key, env = live
    printed = "".join(output for _, output in page_run("docs/api/python-sdk.md", url, key, env))
    assert "404 record_not_found id" in printed, printed


def test_the_frameworks_examples_print_what_they_promise(live):
    """docs/frameworks.md: each framework's example reaches the sample data and the store's
    delete forgets; the tool's refusal names its own argument."""
    url, key, env = live
    printed = "".join(output for _, output in page_run("docs/frameworks.md", url, key, env))
    assert "120k" in printed  # the retriever's best hit for Maria's budget
    assert "{'text': 'Ada is vegetarian.', 'since': 2019}" in printed
    assert "{'text': 'Maria is the CFO of Acme.'}" in printed
    assert "[('users', 'ada')]" in printed and "\nNone\n" in printed
    # The graph node's answer: Maria's current preferred_channel (another page's example may have
    # written a newer value on the shared server before this page ran).
    with MemseekClient(url, key) as memseek:
        current = memseek.document_history(entity="contact.maria", collection="main", key="preferred_channel")
    assert f"\n{current.versions[0].text}\n" in printed
    assert "['search_memory', 'remember', 'memory_brief']" in printed
    assert "weekly status email" in printed and '"path": "key"' not in printed and "'path': 'key'" in printed


MARKER = "<!-- docs-example: not run (a reason) -->"


@pytest.mark.parametrize(("text", "expected"), [
    ("```bash\necho hi\n```\n", [("bash", True, None)]),
    ("```python\nx = 1\n```\n", [("python", True, None)]),
    (f"{MARKER}\n```bash\nrm -rf /\n```\n", [("bash", False, "a reason")]),
    (f"{MARKER}\n\n```bash\necho\n```\n", [("bash", False, "a reason")]),
    ("```yaml\na: 1\n```\n", [("yaml", False, None)]),
    ("```text\n$ ls\n```\n```sh\nls\n```\n", [("text", False, None), ("sh", True, None)]),
    ("````markdown\n```bash\nnot a block\n```\n````\n", [("markdown", False, None)]),
])
def test_which_blocks_run(text, expected):
    found = examples_parse("page.md", text)
    assert [(e.language, e.runs, e.not_run) for e in found] == expected
    assert all(isinstance(e, Example) for e in found)


@pytest.mark.parametrize(("text", "message"), [
    ("```\nbare\n```\n", "page.md:1: a fence needs an info string"),
    ("```bash\nnever closed\n", "page.md:1: the fence is never closed"),
    ("<!-- docs-example: not run () -->\n```bash\nx\n```\n", "page.md:1: a docs-example marker"),
    ("<!-- docs-example: not run (why) -->\nprose\n", "page.md:1: a docs-example marker"),
    ("<!-- docs-example: skip -->\n```bash\nx\n```\n", "page.md:1: a docs-example marker"),
])
def test_malformed_pages_are_refused(text, message):
    with pytest.raises(ExampleFormatError, match=re.escape(message)):
        examples_parse("page.md", text)
