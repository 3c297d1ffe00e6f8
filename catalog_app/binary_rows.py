"""Running a statement on Django's connection with results in binary.

Block data is ``bytea``: in PostgreSQL's text format every byte travels as two hex digits and
is decoded again on arrival, which made reading a query's blocks several times slower. Django's
cursors bind client-side and read text, so the statement runs on a psycopg cursor of the same
connection (same transaction), through Django's execute wrappers like any other statement, so
traces and statement counters still see it, and unprepared, as Django's own cursors run every
statement (psycopg would prepare one after five runs, and PostgreSQL could then plan it once for
every scope and term list). Its parameters are bound server-side too, so a large one (the JSON of
a batch of records) travels as a value instead of a literal escaped into the statement text.
"""
from __future__ import annotations

import functools

import psycopg
from django.db import connection


def binary_rows(sql: str, params) -> list[tuple]:
    """Every row of ``sql`` with ``params`` (``%s``/``%(name)s`` placeholders), read in binary."""
    connection.ensure_connection()
    connection.validate_no_broken_transaction()
    with connection.cursor() as django_cursor, psycopg.Cursor(connection.connection) as cursor:
        def run(statement, arguments, many, context):
            with connection.wrap_database_errors:
                cursor.execute(statement, arguments, binary=True, prepare=False)

        executor = run
        for wrapper in reversed(connection.execute_wrappers):
            executor = functools.partial(wrapper, executor)
        executor(sql, params, False, {"connection": connection, "cursor": django_cursor})
        return cursor.fetchall()
