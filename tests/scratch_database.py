"""A scratch database on the test server for a live process (gunicorn, ``manage.py``): created
empty, dropped (with its connections) afterwards."""
from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from django.db import connection

from bench.processes import database_url


def _admin() -> dict:
    settings = connection.settings_dict
    return {key: value for key, value in (("host", settings["HOST"]), ("port", settings["PORT"]),
                                          ("user", settings["USER"]), ("password", settings["PASSWORD"])) if value}


@contextmanager
def scratch_database(prefix: str) -> Iterator[dict]:
    """Yields this process's environment, without a broker (tasks run in-process) and with one
    torch thread, pointed at a new database ``<prefix>_<random>``."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dbname="postgres", autocommit=True, **_admin()) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    env = {key: value for key, value in os.environ.items() if key != "CELERY_BROKER_URL"}
    env.update(DATABASE_URL=database_url({**connection.settings_dict, "NAME": name}), OMP_NUM_THREADS="1")
    try:
        yield env
    finally:
        with psycopg.connect(dbname="postgres", autocommit=True, **_admin()) as conn:
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
