"""Every API request runs against a deadline, and running out is ``503 deadline_exceeded``.

A request's budget comes from its route class (``route_class``): ``read`` (GET and HEAD),
``search`` (the POST routes that take a question) and ``bulk`` (writes and batch evaluation),
set by ``REQUEST_DEADLINE_MS``, ``REQUEST_DEADLINE_SEARCH_MS`` and ``REQUEST_DEADLINE_BULK_MS``.
``DeadlineMiddleware`` starts the clock before the view runs; a request made in-process while
another runs (an MCP tool calling a route) keeps the earlier of the two ends.

The budget is enforced in two places:

* Every SQL statement of the request (on any thread that carries the request's context, see
  ``memseek_site.parallel``) runs under ``statement_timeout`` set to what is left, with
  ``set_config('statement_timeout', ..., true)`` inside the statement's transaction, so the
  setting ends with the transaction and never leaks to the next user of a pooled connection (a
  transaction pooler such as PgBouncer). A statement outside a transaction gets one of its own.
  PostgreSQL cancels a statement that runs past it (SQLSTATE 57014), which the API answers as
  ``deadline_exceeded``.
* Python stages call ``check()`` between steps; past the end it raises ``deadline_exceeded``.

Either way the worker answers the envelope and serves the next request; gunicorn's own worker
timeout (``gunicorn_timeout_s``) stays above the longest deadline, so it never kills a worker
that is still within its budget.
"""
from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from django.db import connection as default_connection
from django.db import transaction
from django.db.backends.signals import connection_created
from django.urls import Resolver404, resolve
from rest_framework.views import APIView

from .conf import memseek_setting
from .errors import ApiError

# Seconds a client should wait before retrying a request that ran out of time.
RETRY_AFTER_S = 1
# What gunicorn's worker timeout adds to the longest deadline: the envelope is rendered and sent
# after the deadline, and a model call checked only between steps may overrun it.
GUNICORN_TIMEOUT_MARGIN_S = 15
# SQLSTATE query_canceled: statement_timeout (or an operator's pg_cancel_backend) stopped it.
QUERY_CANCELED = "57014"

# The URL names (Django's ``name=``) of the routes outside the read class, by class.
SEARCH_ROUTES = frozenset({"search", "search-lexical", "retrieve", "memory-search", "view-query", "mcp"})
# "record-detail": its DELETE (an erasure); its GET is a read like every GET.
BULK_ROUTES = frozenset({"records", "record-approve", "record-reject", "receipt-feedback", "evaluate", "erase",
                         "import", "record-detail"})
CLASS_SETTINGS = {"read": "REQUEST_DEADLINE_MS", "search": "REQUEST_DEADLINE_SEARCH_MS",
                  "bulk": "REQUEST_DEADLINE_BULK_MS"}

_end: ContextVar[float | None] = ContextVar("memseek_request_deadline", default=None)


def exceeded(stage: str) -> ApiError:
    """The error a request past its deadline answers, naming the ``stage`` that noticed."""
    return ApiError("deadline_exceeded", f"The request ran out of time ({stage}); its route's deadline is set by "
                                         "REQUEST_DEADLINE_MS and its per-class overrides. Retry, or ask a narrower "
                                         "question.", None, {"stage": stage})


def route_class(url_name: str | None, method: str) -> str:
    """``read``, ``search`` or ``bulk`` for the route named ``url_name`` called with ``method``."""
    if method in ("GET", "HEAD", "OPTIONS"):
        return "read"
    if url_name in BULK_ROUTES:
        return "bulk"
    return "search" if url_name in SEARCH_ROUTES else "read"


def class_deadline_ms(name: str) -> int:
    return int(memseek_setting(CLASS_SETTINGS[name]))


def gunicorn_timeout_s() -> int:
    """gunicorn's ``--timeout`` for the configured deadlines: above the longest one."""
    longest = max(class_deadline_ms(name) for name in CLASS_SETTINGS)
    return math.ceil(longest / 1000) + GUNICORN_TIMEOUT_MARGIN_S


@contextmanager
def deadline_scope(seconds: float) -> Iterator[None]:
    """Run the block with a deadline ``seconds`` from now, or the enclosing one if earlier."""
    end = time.monotonic() + seconds
    enclosing = _end.get()
    token = _end.set(end if enclosing is None else min(end, enclosing))
    try:
        yield
    finally:
        _end.reset(token)


@contextmanager
def beyond_deadline() -> Iterator[None]:
    """Run the block with no deadline: the bookkeeping of a request whose work has committed
    (its consistency token), which must never turn an acknowledged write into an error."""
    token = _end.set(None)
    try:
        yield
    finally:
        _end.reset(token)


def remaining_s() -> float | None:
    """Seconds left before the current deadline (negative past it), None when there is none."""
    end = _end.get()
    return None if end is None else end - time.monotonic()


def check(stage: str) -> None:
    """Raise ``deadline_exceeded`` naming ``stage`` when the current deadline has passed."""
    left = remaining_s()
    if left is not None and left <= 0:
        raise exceeded(stage)


def is_statement_timeout(error: BaseException) -> bool:
    """Whether ``error`` (a Django database error) is PostgreSQL cancelling a statement."""
    cause = error.__cause__
    return getattr(cause, "sqlstate", None) == QUERY_CANCELED


# Transaction control and SET always run as they are: a request past its deadline must still roll
# back, and SET TRANSACTION must be its transaction's first statement (the timeout is set by the
# statement after it); neither does work a deadline could bound.
_PASSED_THROUGH = ("SAVEPOINT", "RELEASE", "ROLLBACK", "COMMIT", "BEGIN", "SET ")


def _statement_under_deadline(execute, sql, params, many, context):
    left = remaining_s()
    wrapper = context["connection"]
    if left is None or (isinstance(sql, str) and sql.lstrip()[:9].upper().startswith(_PASSED_THROUGH)):
        return execute(sql, params, many, context)
    if left <= 0:
        raise exceeded("database")
    # At least 1 ms: 0 would mean "no timeout" to PostgreSQL.
    timeout_ms = max(1, int(left * 1000))
    if wrapper.in_atomic_block or not wrapper.get_autocommit():
        _set_timeout(wrapper, timeout_ms)
        return execute(sql, params, many, context)
    with transaction.atomic(using=wrapper.alias):
        _set_timeout(wrapper, timeout_ms)
        return execute(sql, params, many, context)


def _set_timeout(wrapper, timeout_ms: int) -> None:
    # On the driver's connection, so it is neither counted nor traced as one of the request's
    # statements; the value is an int this module computed, never caller text.
    with wrapper.wrap_database_errors:
        wrapper.connection.execute(f"SELECT set_config('statement_timeout', '{timeout_ms}', true)", prepare=False)


def attach(wrapper=default_connection) -> None:
    """Make ``wrapper`` (a Django connection; the current thread's by default) run its
    statements under the current deadline; idempotent."""
    if _statement_under_deadline not in wrapper.execute_wrappers:
        wrapper.execute_wrappers.insert(0, _statement_under_deadline)


def _attach_on_connect(sender, connection, **kwargs) -> None:
    attach(connection)


connection_created.connect(_attach_on_connect, dispatch_uid="memseek_site.deadline")


class DeadlineMiddleware:
    """Starts the deadline of every API route (DRF views) before the view runs."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            match = resolve(request.path_info)
        except Resolver404:
            return self.get_response(request)
        view_class = getattr(match.func, "cls", None)
        if not (isinstance(view_class, type) and issubclass(view_class, APIView)):
            return self.get_response(request)
        attach()
        budget_ms = class_deadline_ms(route_class(match.url_name, request.method))
        with deadline_scope(budget_ms / 1000):
            return self.get_response(request)
