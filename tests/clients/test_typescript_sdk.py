"""The TypeScript SDK (clients/typescript/) builds with tsc and its node tests pass against a live server.

``npm ci`` installs the pinned compiler and generator when node_modules is absent; ``npm test`` compiles with
``tsc`` and runs ``node --test`` over every test file: the unit tests, the check of every operation of
docs/openapi.json against the SDK's methods and generated types, the retry tests against a scripted loopback
server, and the live tests against the server this module starts (its URL and two workspace keys in the
environment). Any failed, cancelled or skipped node test fails this test."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import LIVE

pytestmark = LIVE
PACKAGE = Path(__file__).resolve().parents[2] / "clients" / "typescript"
NPM_TIMEOUT_S = 900


def _npm() -> str:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are not installed (.ci/install-system-packages installs them)")
    return npm


def _run(npm: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([npm, *args], cwd=PACKAGE, env=env, capture_output=True, text=True,
                          timeout=NPM_TIMEOUT_S, check=False)


def _summary(tap: str) -> dict[str, int]:
    """The counts of node's TAP summary (``# pass 12`` ...)."""
    return {name: int(count) for name, count in re.findall(r"^# (tests|pass|fail|cancelled|skipped|todo) (\d+)$",
                                                             tap, flags=re.MULTILINE)}


def test_the_typescript_sdk_compiles_and_its_node_tests_pass_against_a_live_server(live):
    npm = _npm()
    env = {**os.environ, "MEMSEEK_URL": live.url, "MEMSEEK_KEY": live.key, "MEMSEEK_OTHER_KEY": live.other_key,
           "NO_COLOR": "1", "npm_config_update_notifier": "false", "npm_config_fund": "false"}
    if not (PACKAGE / "node_modules" / ".bin" / "tsc").exists():
        installed = _run(npm, "ci", "--no-audit", env=env)
        assert installed.returncode == 0, installed.stdout + installed.stderr
    result = _run(npm, "test", env=env)
    output = result.stdout + result.stderr
    counts = _summary(result.stdout)
    assert result.returncode == 0, output
    assert counts.get("pass", 0) > 0 and counts.get("fail") == 0, output
    assert counts.get("cancelled", 0) == 0 and counts.get("skipped", 0) == 0 and counts.get("todo", 0) == 0, output
