"""The pooled test run: with ``MEMSEEK_TEST_POOLER=pgbouncer`` the session starts a PgBouncer in
transaction mode (``tests/pgbouncer.py``) in front of the test server, and every connection to the
test database goes through it: Django's (with ``DATABASE_POOLER=pgbouncer``'s options, from
``memseek_site.database.pooler_options``), the pool threads', and those of the processes the tests
start (gunicorn, Celery workers), which inherit ``DATABASE_POOLER`` and get the pooler's address in
their ``DATABASE_URL``. The test database is ``<test database>_pooled`` (then ``_<label>`` when
``MEMSEEK_TEST_POOLER_RUN`` gives one), so a pooled session runs beside a direct one, and beside
another labelled pooled one, on the same server.

After every test that used the database, each server session the pooler holds to it is checked for
state an earlier transaction left behind (``PgBouncer.session_leftovers``); finding any fails that
test. ``MEMSEEK_TEST_POOLER_REPORT``, when set, names a JSON file the session writes at its end:
the transactions the pooler passed to the test database and the checks made, so a caller can see
the pooler was in the path.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from django.db import connections

from memseek_site.database import pooler_options
from tests.pgbouncer import PgBouncer

POOLER_VARIABLE = "MEMSEEK_TEST_POOLER"
REPORT_VARIABLE = "MEMSEEK_TEST_POOLER_REPORT"
RUN_VARIABLE = "MEMSEEK_TEST_POOLER_RUN"
POOLED_SUFFIX = "_pooled"
# Server sessions per database: the search pool's threads and a test's own connection at once.
POOL_SIZE = 8

_bouncer: PgBouncer | None = None
_direct: dict | None = None
_checks = {"tests_checked": 0, "sessions_with_leftovers": 0}


def pooler_requested() -> bool:
    """Whether this session runs pooled; raises ``pytest.UsageError`` for an unknown pooler."""
    value = os.environ.get(POOLER_VARIABLE, "").strip().lower()
    if value not in ("", "pgbouncer"):
        raise pytest.UsageError(f"{POOLER_VARIABLE} must be pgbouncer or unset, got {value!r}")
    return value == "pgbouncer"


@pytest.fixture(scope="session")
def pgbouncer_in_front():
    """The session's PgBouncer in front of the test server when the run is pooled (module doc),
    with Django's ``default`` connection pointed at it; ``None`` on a direct run."""
    global _bouncer, _direct
    if not pooler_requested():
        yield None
        return
    database = connections["default"].settings_dict
    connections["default"].close()
    bouncer = PgBouncer(server_host=database["HOST"] or "127.0.0.1", server_port=int(database["PORT"] or 5432),
                        user=database["USER"], pool_size=POOL_SIZE).start()
    before, environment_before = dict(database), os.environ.get("DATABASE_POOLER")
    pooled = pooler_options({**database, "HOST": "127.0.0.1", "PORT": str(bouncer.port)}, "pgbouncer")
    label = os.environ.get(RUN_VARIABLE, "").strip()
    pooled["TEST"] = {**database.get("TEST", {}),
                      "NAME": database["TEST"]["NAME"] + POOLED_SUFFIX + (f"_{label}" if label else "")}
    database.clear()
    database.update(pooled)  # in place: Django's connection holds this very dict
    os.environ["DATABASE_POOLER"] = "pgbouncer"
    _bouncer, _direct = bouncer, before
    try:
        yield bouncer
    finally:
        _bouncer = _direct = None
        bouncer.stop()
        database.clear()
        database.update(before)
        if environment_before is None:
            os.environ.pop("DATABASE_POOLER", None)
        else:
            os.environ["DATABASE_POOLER"] = environment_before


def server_settings() -> dict:
    """Django's settings of a direct connection to the test server (on a pooled run, those from
    before the pooler was put in front; the ``NAME`` is the configured, not the test, database)."""
    return dict(_direct if _direct is not None else connections["default"].settings_dict)


def pooler_release(dbname: str) -> None:
    """On a pooled run, close the pooler's server sessions to ``dbname`` (before it is copied as a
    template or dropped); nothing on a direct run."""
    if _bouncer is not None:
        _bouncer.release(dbname)


def pooled_session_end(dbname: str) -> None:
    """On a pooled run, write the report (module doc) and let go of the test database ``dbname``
    so it can be dropped; the caller has closed every connection to it."""
    if _bouncer is None:
        return
    pooled_sessions_check(dbname)  # the last test's: its teardown ends the session
    report = os.environ.get(REPORT_VARIABLE)
    if report:
        Path(report).write_text(json.dumps({"database": dbname, "transactions": _bouncer.transactions(dbname),
                                            "pool_mode": _pool_mode(dbname), **_checks}))
    _bouncer.release(dbname)


def _pool_mode(dbname: str) -> str | None:
    return next((row["pool_mode"] for row in _bouncer.admin("SHOW POOLS") if row["database"] == dbname), None)


def pooled_sessions_check(dbname: str) -> None:
    """On a pooled run, fail the current test when a server session of ``dbname`` kept state from an
    earlier transaction; the sessions are closed first, so the next test starts clean."""
    if _bouncer is None or POOLED_SUFFIX not in dbname:
        return
    _checks["tests_checked"] += 1
    leftovers = _bouncer.session_leftovers(dbname)
    if leftovers:
        _checks["sessions_with_leftovers"] += 1
        connections.close_all()  # the release drops the clients too; Django's reconnect at the next use
        _bouncer.release(dbname)
        pytest.fail("state outlived its transaction in a pooled server session (transaction pooling hands "
                    "that session to another client next): " + "; ".join(leftovers), pytrace=False)
