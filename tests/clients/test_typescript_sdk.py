"""The TypeScript SDK (clients/typescript/) builds with tsc and its node tests pass against a live server.

``npm ci`` installs the pinned compiler and generator when node_modules is absent; ``npm test`` compiles with
``tsc`` and runs ``node --test`` over every test file: the unit tests, the check of every operation of
docs/openapi.json against the SDK's methods and generated types, the retry tests against a scripted loopback
server, and the live tests against the server this module starts (its URL and two workspace keys in the
environment). Any failed, cancelled or skipped node test fails this test."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from memseek_client.errors import STATUS_CLASSES
from memseek_client.retry import RetryPolicy


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


@pytest.fixture(scope="module")
def npm() -> str:
    """npm, with the package's pinned tools installed (``npm ci``) when node_modules lacks them."""
    npm = _npm()
    if not (PACKAGE / "node_modules" / ".bin" / "tsc").exists():
        installed = _run(npm, "ci", "--no-audit", env=_env())
        assert installed.returncode == 0, installed.stdout + installed.stderr
    return npm


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "NO_COLOR": "1", "npm_config_update_notifier": "false", "npm_config_fund": "false", **extra}


@pytest.mark.model
@pytest.mark.django_db
def test_the_typescript_sdk_compiles_and_its_node_tests_pass_against_a_live_server(npm, live):
    env = _env(MEMSEEK_URL=live.url, MEMSEEK_KEY=live.key, MEMSEEK_OTHER_KEY=live.other_key)
    result = _run(npm, "test", env=env)
    output = result.stdout + result.stderr
    counts = _summary(result.stdout)
    assert result.returncode == 0, output
    assert counts.get("pass", 0) > 0 and counts.get("fail") == 0, output
    assert counts.get("cancelled", 0) == 0 and counts.get("skipped", 0) == 0 and counts.get("todo", 0) == 0, output


def test_the_typescript_sdk_has_the_python_sdks_error_classes_and_retry_defaults(npm):
    """One error model for both SDKs: the same status → class table and the same retry bounds."""
    built = _run(npm, "run", "build", env=_env())
    assert built.returncode == 0, built.stdout + built.stderr
    script = """
        import { STATUS_CLASSES, RetryPolicy } from './dist/src/index.js';
        const { attempts, backoffBaseMs, backoffMaxMs, maxRetryAfterMs } = new RetryPolicy();
        const classes = Object.fromEntries([...STATUS_CLASSES].map(([status, cls]) => [status, cls.name]));
        console.log(JSON.stringify({ classes, policy: [attempts, backoffBaseMs, backoffMaxMs, maxRetryAfterMs] }));
    """
    done = subprocess.run(["node", "--input-type=module", "-e", script], cwd=PACKAGE, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["classes"] == {str(status): cls.__name__ for status, cls in STATUS_CLASSES.items()}
    python = RetryPolicy()
    assert answer["policy"] == [python.attempts, python.backoff_base * 1000, python.backoff_max * 1000,
                                python.max_retry_after * 1000]
