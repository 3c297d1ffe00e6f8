"""A live Memseek for the SDK's tests: gunicorn on a free loopback port serving the test
database, and per test module two workspaces (the example catalog loaded) committed there, so
the server's processes see them; the module's data is flushed afterwards, as pytest-django's
``transactional_db`` does after each test.

A module using ``live`` marks itself ``django_db`` (``LIVE`` below): pytest-django creates the
test database only for a session with such tests. Each test then runs inside a transaction of
its own on the test process's connection, which it never uses: everything goes over HTTP."""
from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.db import connection

from bench.processes import Server, database_url
from catalog_app.services.catalog_load import catalog_load
from catalog_app.services.workspaces import workspace_create
from memseek_client import MemseekClient
from tests.conftest import EXAMPLE_CATALOG, flush_committed_rows

LIVE = [pytest.mark.model, pytest.mark.django_db]

# Small enough that a test can exceed it with one batch (the default is about 56 MB).
LIVE_MAX_BODY_BYTES = 1_000_000


@dataclass(frozen=True)
class Live:
    url: str
    key: str
    other_key: str

    def client(self, **options) -> MemseekClient:
        return MemseekClient(self.url, self.key, **options)


@pytest.fixture(scope="session")
def live_server_url(django_db_setup, django_db_blocker) -> str:
    """gunicorn (one sync worker, the bundled model in-process) on the test database."""
    # An empty broker URL is "unset": enrichment runs in the request, so a write is ready when
    # it returns.
    server = Server(workers=1, env={"DATABASE_URL": database_url(connection.settings_dict), "CELERY_BROKER_URL": "",
                                    "OMP_NUM_THREADS": "1", "MAX_BODY_BYTES": str(LIVE_MAX_BODY_BYTES)})
    yield f"http://127.0.0.1:{server.port}"
    server.stop()


@pytest.fixture(scope="module")
def live(live_server_url, django_db_blocker) -> Live:
    with django_db_blocker.unblock():
        workspace, key = workspace_create(name="sdk-co")
        catalog_load(workspace=workspace, directory=EXAMPLE_CATALOG)
        other, other_key = workspace_create(name="sdk-other")
        catalog_load(workspace=other, directory=EXAMPLE_CATALOG)
    yield Live(live_server_url, key, other_key)
    with django_db_blocker.unblock():
        flush_committed_rows()


@pytest.fixture
def client(live):
    with live.client() as memseek:
        yield memseek


@pytest.fixture(scope="module")
def listed_routes(live) -> set[tuple[str, str]]:
    """The (method, path) pairs the live server's own OpenAPI document lists."""
    with live.client() as memseek:
        document = memseek.openapi()
    return {(method.upper(), path) for path, operations in document["paths"].items() for method in operations}


def require_route(listed_routes: set[tuple[str, str]], method: str, path: str) -> None:
    """Skip, saying why, when the server under test does not offer ``method path`` yet (routes
    built on other branches this session)."""
    if (method, path) not in listed_routes:
        pytest.skip(f"the live server's OpenAPI document does not list {method} {path}")
