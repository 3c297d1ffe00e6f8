"""Scratch databases on the test server for live processes (gunicorn, ``manage.py``, the bench
scripts), copied from one migrated template instead of each migrated anew.

The template is a copy of the freshly migrated test database, taken once at the start of a session
that has one, before any test connects to it (``migrated_template_create``). A scratch database is
``CREATE DATABASE ... TEMPLATE`` of it, which is what ``migrate`` on an empty database leaves, so
the ``migrate`` its user still runs has nothing to do (on a pooled run the pooler's server sessions
to the test database are closed first, as ``TEMPLATE`` needs no other session on it). Without a
test database (a session of tests that never touch it) a scratch database starts empty and that
``migrate`` builds it. A test of migrating an empty database (``manage.py quickstart``) makes its
own."""
from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from django.db import connection, connections

from bench.processes import database_url
from memseek_site import parallel
from tests.pooled_database import pooler_release


def _admin() -> dict:
    settings = connection.settings_dict
    return {key: value for key, value in (("host", settings["HOST"]), ("port", settings["PORT"]),
                                          ("user", settings["USER"]), ("password", settings["PASSWORD"])) if value}


_template: str | None = None


def migrated_template_create() -> str | None:
    """Copy the test database (migrated, no test has written yet) to ``<test database>_template``
    and return that name; ``None`` when the session set up no test database. Every connection to
    the test database is closed first, as ``TEMPLATE`` needs."""
    global _template
    settings = connection.settings_dict
    if settings["NAME"] != (settings.get("TEST") or {}).get("NAME"):
        return None
    connections.close_all()
    parallel.shutdown()
    pooler_release(settings["NAME"])
    name = f"{settings['NAME']}_template"
    with psycopg.connect(dbname="postgres", autocommit=True, **_admin()) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{settings["NAME"]}"')
    _template = name
    return name


def migrated_template_drop() -> None:
    global _template
    if _template is not None:
        with psycopg.connect(dbname="postgres", autocommit=True, **_admin()) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{_template}" WITH (FORCE)')
        _template = None


@contextmanager
def scratch_database(prefix: str) -> Iterator[dict]:
    """Yields this process's environment, without a broker (tasks run in-process) and with one
    torch thread, pointed at a new database ``<prefix>_<random>`` (a copy of the template when
    there is one, else empty); dropped (with its connections) afterwards."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dbname="postgres", autocommit=True, **_admin()) as conn:
        conn.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{_template}"' if _template else ""))
    env = {key: value for key, value in os.environ.items() if key != "CELERY_BROKER_URL"}
    env.update(DATABASE_URL=database_url({**connection.settings_dict, "NAME": name}), OMP_NUM_THREADS="1")
    try:
        yield env
    finally:
        with psycopg.connect(dbname="postgres", autocommit=True, **_admin()) as conn:
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
