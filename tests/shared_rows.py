"""Rows written once for many tests: a class- or module-scoped fixture writes them inside one
transaction that is rolled back when its scope ends. Each test that also asks for ``db`` runs in a
savepoint inside it (pytest-django's per-test atomic block nests), so whatever a test writes is
still rolled back before the next one, and none of it is ever committed."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import transaction


@contextmanager
def rows_shared_by_the_tests(django_db_blocker) -> Iterator[None]:
    """Around the shared fixture's writes and its ``yield``: the database unblocked and one
    transaction open, rolled back at the end."""
    with django_db_blocker.unblock(), transaction.atomic():
        yield
        transaction.set_rollback(True)
