"""Memseek behind PgBouncer in transaction mode (docs/scaling.md, "Connections").

``DATABASE_POOLER``'s connection options; that the test harness's pooler really hands one server
session to one client after another, so state a transaction leaves behind is what the next client
gets, and that its per-test check names each kind of such state; and the pooled run: the
integration tests of every route, the Celery workers and the lexical compaction, with the test
database reached through PgBouncer (``tests/pooled_database.py``), run in a pytest subprocess.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memseek_site.database import pooler_options
from tests.pgbouncer import PgBouncer, available
from tests.pooled_database import POOLER_VARIABLE, REPORT_VARIABLE, RUN_VARIABLE, server_settings

pytestmark = pytest.mark.pooler

ROOT = Path(__file__).resolve().parents[2]
NEEDS_PGBOUNCER = pytest.mark.skipif(
    not available(), reason="needs the pgbouncer executable (Debian package pgbouncer; .ci/run installs it)")
# Every keyed route (by the URLconf), the error envelope of every route, the Celery workers against
# Redis, the lexical compaction; then the writes, reads, searches, retrievals and MCP tools behind
# those routes, fan-outs on the pool threads (autocommit, so each task's transactions are pooled)
# and the SDK against a live server. Not tests/memseek_site/test_parallel.py: it identifies a pool
# thread's connection by its server process (pg_backend_pid), which a transaction pooler changes by
# design.
POOLED_MODULES = (
    "tests/memseek_site/test_cross_workspace.py",
    "tests/memseek_site/test_api_envelope.py",
    "tests/catalog_app/test_worker.py",
    "tests/catalog_app/test_lexical_compaction.py",
    "tests/catalog_app/test_records_write.py",
    "tests/retrieval_app/test_lexical_route.py",
    "tests/retrieval_app/test_retrieve.py",
    "tests/retrieval_app/test_memory_search.py",
    "tests/retrieval_app/test_mcp_routes.py",
    "tests/retrieval_app/test_parallel.py",
    "tests/search_app/test_search_modes.py",
    "tests/memseek_client/test_client_records.py",
)
PROBE_MODULE = "tests/memseek_site/pooled_leak_probe.py"

BASE = {"ENGINE": "django.db.backends.postgresql", "NAME": "memseek", "HOST": "db", "PORT": "6432",
        "OPTIONS": {"sslmode": "require"}, "CONN_MAX_AGE": 60}


# --- DATABASE_POOLER ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["", "none", " None "])
def test_without_a_pooler_the_settings_are_unchanged(name):
    assert pooler_options(BASE, name) == BASE


@pytest.mark.parametrize("name", ["pgbouncer", "PgBouncer "])
def test_pgbouncer_turns_off_prepared_statements_and_server_side_cursors_and_keeps_the_rest(name):
    pooled = pooler_options(BASE, name)
    assert pooled["OPTIONS"] == {"sslmode": "require", "prepare_threshold": None}
    assert pooled["DISABLE_SERVER_SIDE_CURSORS"] is True
    assert {key: value for key, value in pooled.items() if key not in ("OPTIONS", "DISABLE_SERVER_SIDE_CURSORS")} \
        == {key: value for key, value in BASE.items() if key != "OPTIONS"}
    assert BASE["OPTIONS"] == {"sslmode": "require"}  # the given settings are not changed


@pytest.mark.parametrize("name", ["pgpool", "pgbouncer,none", "session"])
def test_an_unknown_pooler_is_refused_by_name(name):
    with pytest.raises(ValueError, match="DATABASE_POOLER must be one of none, pgbouncer"):
        pooler_options(BASE, name)


def test_the_process_settings_read_database_pooler(monkeypatch, tmp_path):
    from memseek_site.database import database_settings

    monkeypatch.setenv("DATABASE_URL", "postgresql://u:p@db:6432/memseek")
    monkeypatch.setenv("DATABASE_POOLER", "pgbouncer")
    assert database_settings(tmp_path)["OPTIONS"] == {"prepare_threshold": None}
    monkeypatch.setenv("DATABASE_POOLER", "odyssey")
    with pytest.raises(ValueError, match="odyssey"):
        database_settings(tmp_path)


# --- The harness's pooler: one server session, client after client ------------------------------

@pytest.fixture
def bouncer(db):
    """A PgBouncer of its own (transaction mode, one server session) in front of the test server."""
    server = server_settings()
    pooler = PgBouncer(server_host=server["HOST"] or "127.0.0.1", server_port=int(server["PORT"] or 5432),
                       user=server["USER"], pool_size=1).start()
    yield pooler
    pooler.stop()


def _two_clients(bouncer):
    return bouncer.connect("postgres", autocommit=True), bouncer.connect("postgres", autocommit=True)


@NEEDS_PGBOUNCER
def test_a_session_set_by_one_client_is_what_the_next_client_gets(bouncer):
    first, second = _two_clients(bouncer)
    with first, second:
        first.execute("SET work_mem = '7MB'")
        assert second.execute("SELECT pg_backend_pid(), current_setting('work_mem')").fetchone() \
            == (first.execute("SELECT pg_backend_pid()").fetchone()[0], "7MB")
        assert any(leftover.endswith("setting work_mem = 7168") for leftover in bouncer.session_leftovers("postgres"))
    assert bouncer.transactions("postgres") >= 3
    assert {row["pool_mode"] for row in bouncer.admin("SHOW POOLS") if row["database"] == "postgres"} \
        == {"transaction"}


@NEEDS_PGBOUNCER
def test_set_config_local_to_a_transaction_leaves_the_next_client_nothing(bouncer):
    first, second = _two_clients(bouncer)
    with first, second:
        with first.transaction():
            assert first.execute("SELECT set_config('work_mem', '7MB', true), current_setting('work_mem')"
                                 ).fetchone() == ("7MB", "7MB")
        assert second.execute("SELECT current_setting('work_mem')").fetchone()[0] != "7MB"
        assert bouncer.session_leftovers("postgres") == []


@NEEDS_PGBOUNCER
@pytest.mark.parametrize("statements,leftover", [
    (["SELECT pg_advisory_lock(77, 78)"], "advisory lock 77/78"),
    (["LISTEN memseek_probe"], "listening on memseek_probe"),
    (["PREPARE memseek_probe AS SELECT 1"], "prepared statement memseek_probe"),
    (["CREATE TEMPORARY TABLE memseek_probe (n int)"], "temporary table memseek_probe"),
    (["BEGIN", "DECLARE memseek_probe CURSOR WITH HOLD FOR SELECT 1", "COMMIT"], "cursor memseek_probe"),
    (["SET search_path = pg_catalog"], "setting search_path = pg_catalog"),
])
def test_the_check_names_each_kind_of_state_a_session_keeps(bouncer, statements, leftover):
    with bouncer.connect("postgres", autocommit=True) as client:
        for statement in statements:
            client.execute(statement)
    leftovers = bouncer.session_leftovers("postgres")
    assert len(leftovers) == 1 and leftovers[0].endswith(leftover), leftovers


@NEEDS_PGBOUNCER
@pytest.mark.parametrize("statement", ["SELECT pg_advisory_xact_lock(77, 78)", "SELECT set_config('jit', 'off', true)",
                                       "CREATE TEMPORARY TABLE memseek_probe (n int) ON COMMIT DROP"])
def test_state_that_ends_with_its_transaction_is_not_reported(bouncer, statement):
    with bouncer.connect("postgres") as client, client.transaction():
        client.execute(statement)
    assert bouncer.session_leftovers("postgres") == []


# --- Pooled pytest runs ----------------------------------------------------------------------------

def _pooled_pytest(run: str, modules, tmp_path) -> tuple[subprocess.CompletedProcess, dict]:
    """A pytest subprocess over ``modules`` with the test database behind PgBouncer: its result and
    the session's pooler report (``tests/pooled_database.py``)."""
    report = tmp_path / "pooler.json"
    environment = {**os.environ, POOLER_VARIABLE: "pgbouncer", REPORT_VARIABLE: str(report), RUN_VARIABLE: run}
    environment.pop("DATABASE_POOLER", None)  # the pooled session sets it for what it starts
    finished = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *modules], check=False,
                              cwd=ROOT, env=environment, capture_output=True, text=True, timeout=3600)
    return finished, (json.loads(report.read_text()) if report.exists() else {})


@NEEDS_PGBOUNCER
def test_the_pooled_run_fails_each_test_that_leaves_state_in_a_server_session(tmp_path):
    """The harness detects the class of bug: the probe's session-level state fails its tests, and
    the same work scoped to a transaction passes."""
    finished, report = _pooled_pytest("probe", [PROBE_MODULE], tmp_path)
    output = finished.stdout + finished.stderr
    assert finished.returncode == 1, output
    # Each leaving test passes, then errors at its teardown's check: 8 passed, 4 of them errors.
    summary = output.strip().splitlines()[-1]
    assert re.search(r"\b8 passed\b", summary) and re.search(r"\b4 errors\b", summary) and "failed" not in summary, \
        output
    assert output.count("ERROR at teardown of test_leaves_") == 4, output
    for leftover in ("setting statement_timeout = 12345", "advisory lock", "listening on memseek_probe",
                     "setting hnsw.ef_search = 77"):
        assert leftover in output, output
    assert report["pool_mode"] == "transaction" and report["sessions_with_leftovers"] == 4, report


@NEEDS_PGBOUNCER
@pytest.mark.worker
@pytest.mark.model
def test_the_integration_tests_pass_through_pgbouncer_in_transaction_mode(tmp_path):
    finished, report = _pooled_pytest("integration", POOLED_MODULES, tmp_path)
    output = finished.stdout + finished.stderr
    assert finished.returncode == 0, output[-20_000:]
    assert " skipped" not in output.splitlines()[-1], output[-5_000:]
    assert report["pool_mode"] == "transaction", report
    assert report["sessions_with_leftovers"] == 0, report
    # Every test's transactions went through the pooler, and every test was followed by the check.
    assert report["transactions"] > report["tests_checked"] > 100, report
