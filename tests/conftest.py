"""Shared test fixtures: a workspace with a bearer key, an API client that sends it, and the
example catalog from ``fixtures/catalogs/example`` loaded into the workspace. With
``MEMSEEK_TEST_POOLER=pgbouncer`` the test database is reached through PgBouncer
(``tests/pooled_database.py``)."""
import os
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection, connections
from rest_framework.test import APIClient

from catalog_app.auth import clear_key_cache
from catalog_app.services.catalog_load import catalog_load
from catalog_app.services.workspaces import workspace_create
from memseek_site import parallel
from tests.pooled_database import pgbouncer_in_front, pooled_session_end, pooled_sessions_check  # noqa: F401
from tests.scratch_database import migrated_template_create, migrated_template_drop

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
EXAMPLE_CATALOG = FIXTURES / "catalogs" / "example"
# The tools of the example MCP declaration (fixtures/catalogs/example/mcp/agent.yaml), in order.
EXAMPLE_TOOL_NAMES = ["customer_context", "search_memory", "brief", "grep", "open_record", "remember", "latest", "ls",
                      "read", "around", "history", "forget", "rate_context"]


@pytest.fixture(scope="session", autouse=True)
def _parallel_threads_let_go_of_the_test_database(django_db_setup):
    """Set up after the test database and torn down before it is dropped: the pool threads'
    persistent connections to it are closed first (and a pooler's server sessions to it after)."""
    yield
    parallel.shutdown()
    connections.close_all()
    pooled_session_end(connection.settings_dict["NAME"])


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix, pgbouncer_in_front):  # noqa: F811
    """pytest-django's hook before the test databases are set up: on a pooled run the connection
    settings point at the pooler by now (``pgbouncer_in_front``)."""


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item):
    """On a pooled run, after each test's fixtures are torn down (its rollback included): no idle
    server session of the test database kept state from a transaction (``pooled_sessions_check``)."""
    result = yield
    pooled_sessions_check(connection.settings_dict["NAME"])
    return result


@pytest.fixture(scope="session", autouse=True)
def _migrated_template(django_db_setup):
    """The migrated template of the scratch databases (``tests/scratch_database.py``), taken before
    any test writes; the bench scripts the tests run create their databases from it too."""
    template = migrated_template_create()
    if template is not None:
        os.environ["BENCH_TEMPLATE_DATABASE"] = template
    yield
    os.environ.pop("BENCH_TEMPLATE_DATABASE", None)
    migrated_template_drop()


def flush_committed_rows() -> None:
    """Empty the test database of rows a live-server test committed, as pytest-django's
    ``transactional_db`` does: the sequences go on (a later test's workspace and seqs never take
    a flushed one's numbers), because the lexical index's tables are unmanaged, so ``flush`` leaves
    their rows, which must never meet a new workspace of the same id."""
    call_command("flush", verbosity=0, interactive=False, reset_sequences=False)


@pytest.fixture(autouse=True)
def _fresh_key_cache():
    clear_key_cache()
    yield
    clear_key_cache()


@pytest.fixture
def embedded_texts(monkeypatch):
    """The texts sent to the embedding model, in order, while the real model still embeds them
    (a query-vector cache hit sends none)."""
    from catalog_app import embedding

    sent: list[str] = []
    real = embedding.embed_texts

    def recording(config, texts):
        sent.extend(texts)
        return real(config, texts)

    monkeypatch.setattr(embedding, "embed_texts", recording)
    return sent


@pytest.fixture
def workspace_and_key(db):
    return workspace_create(name="acme")


@pytest.fixture
def workspace(workspace_and_key):
    return workspace_and_key[0]


@pytest.fixture
def api(workspace_and_key):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {workspace_and_key[1]}")
    return client


@pytest.fixture
def catalog(workspace):
    """The example catalog loaded into ``workspace``; returns the workspace, refreshed."""
    catalog_load(workspace=workspace, directory=EXAMPLE_CATALOG)
    workspace.refresh_from_db()
    return workspace


@pytest.fixture
def other_workspace_api(db):
    other, key = workspace_create(name="other-co")
    catalog_load(workspace=other, directory=EXAMPLE_CATALOG)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client
