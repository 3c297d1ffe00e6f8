"""The SDK is typed for checkers: ``mypy --strict`` passes over the package and over code using
it (the SDK page's examples included), sees each route method's model (``assert_type``), and
fails on code that misuses a result, so the types are not ``Any``."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SDK_PAGE = ROOT / "docs" / "api" / "python-sdk.md"

USAGE = '''
from typing import Any, assert_type
from collections.abc import AsyncIterator, Awaitable, Iterator

from memseek_client import AsyncMemseekClient, MemseekClient
from memseek_client.models import (Brief, ErasureResult, ImportResult, IngestResult, MemoryContext, TimelinePage,
                                   TimelineRow, ToolList)


def sync_use(memseek: MemseekClient) -> None:
    assert_type(memseek.timeline("contact.maria", limit=3), TimelinePage)
    assert_type(memseek.tools(), ToolList)
    assert_type(memseek.retrieve("q", entity="contact.maria"), MemoryContext)
    assert_type(memseek.memory_search("q"), Brief)
    assert_type(memseek.write_records([{"entity": "e"}]), IngestResult)
    assert_type(memseek.iter_timeline("contact.maria"), Iterator[TimelineRow])
    assert_type(memseek.openapi(), dict[str, Any])
    assert_type(memseek.delete_record("id", dry_run=True), ErasureResult)
    assert_type(memseek.erase_entity("contact.maria", collection="main"), ErasureResult)
    assert_type(memseek.iter_export(entity="contact.maria"), Iterator[str])
    assert_type(memseek.import_export("", ids="remap"), ImportResult)


async def async_use(memseek: AsyncMemseekClient) -> None:
    assert_type(memseek.timeline("contact.maria"), Awaitable[TimelinePage])
    assert_type(await memseek.tools(), ToolList)
    assert_type(await memseek.delete_record("id"), ErasureResult)
    assert_type(memseek.iter_timeline("contact.maria"), AsyncIterator[TimelineRow])
    assert_type(memseek.iter_export(), AsyncIterator[str])
    assert_type(await memseek.import_export(b""), ImportResult)
'''
MISUSE = '''
from memseek_client import MemseekClient


def misuse(memseek: MemseekClient) -> int:
    page = memseek.timeline("contact.maria")
    memseek.timeline(entity=7)
    return page.no_such_member
'''


def _mypy(*targets: str, cwd: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mypy", "--config-file", "", "--strict", "--no-error-summary",
                           "--cache-dir", str(cache),
                           *targets], cwd=cwd, capture_output=True, text=True, timeout=600)


def _readme_examples() -> str:
    section = SDK_PAGE.read_text()
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    body = "\n".join(blocks).replace("\n", "\n    ")
    # The examples use a key they do not define; everything else is as the SDK page writes it.
    return f"def readme(KEY: str) -> None:\n    {body}\n"


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("mypy-cache")


def test_mypy_strict_passes_over_the_package(cache):
    done = _mypy("memseek_client", cwd=ROOT, cache=cache)
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_strict_sees_each_methods_model_and_the_readme_examples_check(tmp_path, cache):
    (tmp_path / "usage.py").write_text(USAGE)
    (tmp_path / "readme_examples.py").write_text(_readme_examples())
    done = _mypy(str(tmp_path / "usage.py"), str(tmp_path / "readme_examples.py"), cwd=ROOT, cache=cache)
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_strict_rejects_misuse_of_a_result(tmp_path, cache):
    (tmp_path / "misuse.py").write_text(MISUSE)
    done = _mypy(str(tmp_path / "misuse.py"), cwd=ROOT, cache=cache)
    assert done.returncode == 1
    assert '"TimelinePage" has no attribute "no_such_member"' in done.stdout
    assert 'incompatible type "int"; expected "str"' in done.stdout
