"""gunicorn's entry point for the deadline tests: ``memseek_site.wsgi`` plus a test hook that
slows chosen statements with ``pg_sleep``.

Every statement whose SQL contains ``SLOW_STATEMENT_MARKER`` is preceded, in its own
transaction and so under the statement timeout the request's deadline set, by
``pg_sleep(SLOW_STATEMENT_SLEEP_S)``. Production code carries no such hook.
"""
import os

from django.db.backends.signals import connection_created

from memseek_site.wsgi import application  # noqa: F401  (what gunicorn serves)

MARKER = os.environ["SLOW_STATEMENT_MARKER"]
SLEEP_S = float(os.environ["SLOW_STATEMENT_SLEEP_S"])


def _slowed(execute, sql, params, many, context):
    if MARKER in sql:
        wrapper = context["connection"]
        with wrapper.wrap_database_errors:
            wrapper.connection.execute(f"SELECT pg_sleep({SLEEP_S})")
    return execute(sql, params, many, context)


def _attach(sender, connection, **kwargs):
    if _slowed not in connection.execute_wrappers:
        connection.execute_wrappers.append(_slowed)


connection_created.connect(_attach, dispatch_uid="tests.slow_statements")
