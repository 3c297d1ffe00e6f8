"""Run only by ``test_pooler.py``, in a pooled pytest session (its name keeps it out of the normal
collection): four tests leave session state behind through Django's connection, each the kind of
bug transaction pooling turns into another client's problem, and the pooled run must fail each of
them; four do the same work the way Memseek's code does it, scoped to a transaction, and must pass."""
import pytest
from django.db import connection, transaction

from catalog_app.record_sql import nearest_scan
from retrieval_app.lexical.slots import retrieval_slot

pytestmark = pytest.mark.django_db(transaction=True)  # autocommit: every statement's effects are kept


def _run(*statements):
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


def test_leaves_a_session_statement_timeout():
    _run("SET statement_timeout = 12345")


def test_leaves_a_session_advisory_lock():
    _run("SELECT pg_advisory_lock(4242, 4343)")


def test_leaves_a_listen():
    _run("LISTEN memseek_probe")


def test_leaves_the_hnsw_setting_of_a_vector_scan():
    _run("SELECT '[1,2]'::vector", "SET hnsw.ef_search = 77")


def test_the_vector_scan_sets_hnsw_for_its_transaction_only():
    with nearest_scan(77) as cursor:
        cursor.execute("SELECT current_setting('hnsw.ef_search')")
        assert cursor.fetchone()[0] == "77"


def test_a_retrieval_slot_is_a_transaction_advisory_lock():
    with retrieval_slot() as slot:
        assert slot == 0


def test_a_statement_timeout_for_one_transaction():
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('statement_timeout', '12345', true), current_setting('statement_timeout')")
        assert cursor.fetchone()[1] == "12345ms"


def test_an_advisory_lock_for_one_transaction():
    with transaction.atomic():
        _run("SELECT pg_advisory_xact_lock(4242, 4343)")
