"""A live Memseek for the MCP transport tests: a scratch database prepared by ``manage.py
quickstart --no-serve`` (the example catalog, with its ``mcp/agent.yaml``, and sample records in
workspace ``demo``), a second workspace ``other`` with a declaration of its own, and gunicorn
serving both on a free loopback port."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from bench.processes import Server
from tests.scratch_database import scratch_database

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "fixtures" / "catalogs" / "example"
OTHER_DECLARATION = {
    "name": "other", "version": 1, "active": True, "title": "Other tools", "instructions": "Only records.",
    "tools": [{"name": "open_record", "kind": "record", "description": "Open one record."},
              {"name": "search_memory", "kind": "retrieve", "description": "Recall."}]}


# These tests check what clients get, not how fast: on a machine the whole suite shares, a cold
# first query (the model loading) must not become a 503 deadline_exceeded.
LIVE_DEADLINES = {"REQUEST_DEADLINE_MS": "120000", "REQUEST_DEADLINE_SEARCH_MS": "120000",
                  "REQUEST_DEADLINE_BULK_MS": "120000"}


def envelope(result) -> dict:
    """A failed tool call's error envelope (and ``status``), carried as its text only: no
    ``structuredContent``, which clients check against the tool's success schema."""
    assert result.is_error and result.structured_content is None, result
    return json.loads(result.content[0].text)


@dataclass
class Live:
    server: Server
    env: dict
    demo_key: str
    other_key: str

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.port}"

    def manage(self, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env={**self.env, **(env or {})},
                              capture_output=True, text=True, timeout=600)

    def load_other(self, tmp: Path, declaration: dict) -> None:
        """Load the example catalog with ``declaration`` as its ``mcp/agent.yaml`` into ``other``."""
        directory = tmp / f"catalog-{uuid.uuid4().hex[:8]}"
        shutil.copytree(EXAMPLE, directory)
        (directory / "mcp" / "agent.yaml").write_text(yaml.safe_dump(declaration, sort_keys=False))
        done = self.manage("load_catalog", "--workspace", "other", str(directory))
        assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def live(tmp_path_factory, request):
    """The live service; ``LIVE_DEADLINES`` and a module's ``LIVE_ENV`` (settings as environment
    variables) are added to the environment of every process it starts."""
    with scratch_database("mcp_live") as env:
        env.update(LIVE_DEADLINES, **getattr(request.module, "LIVE_ENV", {}))
        prepared = subprocess.run([sys.executable, "manage.py", "quickstart", "--no-serve"], cwd=ROOT, env=env,
                                  capture_output=True, text=True, timeout=600)
        assert prepared.returncode == 0, prepared.stdout + prepared.stderr
        demo_key = re.search(r"API key \(shown once\):\s+(\S+)", prepared.stdout).group(1)
        created = subprocess.run([sys.executable, "manage.py", "create_workspace", "other"], cwd=ROOT, env=env,
                                 capture_output=True, text=True, timeout=120)
        assert created.returncode == 0, created.stdout + created.stderr
        other_key = created.stdout.split()[-1]
        server = Server(workers=1, env=env)
        try:
            service = Live(server, env, demo_key, other_key)
            service.load_other(tmp_path_factory.mktemp("other"), OTHER_DECLARATION)
            yield service
        finally:
            server.stop()
