"""Scratch databases on the test server for live processes (gunicorn, ``manage.py``, the bench
scripts), copied from one migrated template instead of each migrated anew.

The template is a copy of the freshly migrated test database, taken once per session before any
test connects to it (``migrated_template_create``); a scratch database is ``CREATE DATABASE ...
TEMPLATE`` of it, which is what ``migrate`` on an empty database would leave, so ``migrate`` on
it is a no-op. A test of migrating an empty database (``manage.py quickstart``) makes its own."""
from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from django.db import connection, connections

from bench.processes import database_url
from memseek_site import parallel


def _admin() -> dict:
    settings = connection.settings_dict
    return {key: value for key, value in (("host", settings["HOST"]), ("port", settings["PORT"]),
                                          ("user", settings["USER"]), ("password", settings["PASSWORD"])) if value}


def migrated_template_name() -> str:
    return f"{connection.settings_dict['NAME']}_template"


def migrated_template_create() -> str:
    """Copy the test database (migrated, no test has written yet) to ``migrated_template_name()``;
    returns that name. Every connection to the test database is closed first, as ``TEMPLATE``
    needs."""
    name = migrated_template_name()
    connections.close_all()
    parallel.shutdown()
    with psycopg.connect(dbname="postgres", autocommit=True, **_admin()) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{connection.settings_dict["NAME"]}"')
    return name


def migrated_template_drop() -> None:
    with psycopg.connect(dbname="postgres", autocommit=True, **_admin()) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{migrated_template_name()}" WITH (FORCE)')


@contextmanager
def scratch_database(prefix: str) -> Iterator[dict]:
    """Yields this process's environment, without a broker (tasks run in-process) and with one
    torch thread, pointed at a new migrated database ``<prefix>_<random>``; dropped (with its
    connections) afterwards."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dbname="postgres", autocommit=True, **_admin()) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{migrated_template_name()}"')
    env = {key: value for key, value in os.environ.items() if key != "CELERY_BROKER_URL"}
    env.update(DATABASE_URL=database_url({**connection.settings_dict, "NAME": name}), OMP_NUM_THREADS="1")
    try:
        yield env
    finally:
        with psycopg.connect(dbname="postgres", autocommit=True, **_admin()) as conn:
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
