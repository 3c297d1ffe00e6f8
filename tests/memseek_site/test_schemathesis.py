"""schemathesis over every operation of the generated OpenAPI document, against gunicorn on
loopback with a real key (``bench/schema_fuzz.py``): no 5xx; every response is a documented
status with the documented body; a request valid by the document is not refused as malformed
(only 404, 409 or a catalog- or data-dependent code, see ``bench.schema_fuzz.DATA_CODES``); a request
invalid by it is refused with a 4xx. A few hundred cases in all; the long run is
``python -m bench schema_fuzz`` (docs/testing.md)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.processes import Server
from bench.schema_fuzz import fuzz_live
from tests.scratch_database import scratch_database

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "fixtures" / "catalogs" / "example"
EXAMPLES_PER_OPERATION = 3


def _manage(env: dict, *args: str) -> str:
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def live():
    """gunicorn over a scratch database holding one workspace with the example catalog; yields
    (base URL, key)."""
    with scratch_database("schemathesis") as env:
        _manage(env, "migrate", "--verbosity", "0")
        key = _manage(env, "create_workspace", "fuzz").split()[-1]
        _manage(env, "load_catalog", str(EXAMPLE), "--workspace", "fuzz")
        server = Server(workers=1, env=env)
        try:
            yield f"http://127.0.0.1:{server.port}", key
        finally:
            server.stop()


@pytest.mark.model
def test_schemathesis_finds_no_mismatch_between_the_document_and_the_server(live):
    base_url, key = live
    report = fuzz_live(base_url, key, examples=EXAMPLES_PER_OPERATION)
    assert report.cases >= 100, report.cases_by_operation
    assert not [status for status in report.by_status if status >= 500], report.failure_summary()
    assert not report.failures, f"{len(report.failures)} failing cases:\n{report.failure_summary()}"


def test_the_key_is_the_one_create_workspace_printed(live):
    # The fixture's key must be a real one: the document is public, every route but /health is not.
    import requests

    base_url, key = live
    assert re.fullmatch(r"[A-Za-z0-9_-]{20,}", key)
    assert requests.get(f"{base_url}/collections", headers={"Authorization": f"Bearer {key}"}).status_code == 200
    assert requests.get(f"{base_url}/collections").status_code == 401
