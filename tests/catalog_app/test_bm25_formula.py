"""``catalog_app.bm25_formula``: the SQL forms PostgreSQL evaluates give the Python formula's
values on random statistics (record counts, document frequencies, term frequencies, lengths),
with the column types the scans use (float8 counts and frequencies, an integer length)."""
import math

import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catalog_app.bm25_formula import B, IDF_FORMULA, K1, SCORE_FORMULA, contribution, contribution_sql, idf, idf_sql


@st.composite
def statistics(draw):
    n = draw(st.integers(1, 10_000_000))
    df = draw(st.integers(1, n))
    tf = draw(st.integers(0, 5_000))
    length = draw(st.integers(tf, 1_000_000))
    average = draw(st.floats(0.5, 100_000.0, allow_nan=False, allow_infinity=False))
    return n, df, tf, length, average


def test_the_formula_is_the_pages():
    assert (K1, B) == (1.2, 0.75)
    assert idf(4, 2) == math.log(2)
    assert contribution(math.log(2), 2, 6, 5) == pytest.approx(math.log(2) * 2 * 2.2 / (2 + 1.2 * (0.25 + 0.9)))
    assert SCORE_FORMULA == ("score = sum(idf(term) * tf(term) * 2.2 / (tf(term) + 1.2 * (0.25 + 0.75 * length / "
                             "average_length)))")
    assert IDF_FORMULA == "idf(term) = ln(1 + (N - df(term) + 0.5) / (df(term) + 0.5))"


@pytest.mark.django_db
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(statistics(), min_size=1, max_size=40))
def test_sql_forms_equal_the_python_formula_on_random_statistics(rows):
    term_idf = idf_sql("v.n", "v.df")
    # Both forms the scans use: idf computed in SQL from counts, and idf computed in Python and sent
    # as a parameter (the canonical reload).
    sql = (f"SELECT {term_idf}, {contribution_sql(term_idf, 'v.tf', 'v.length', 'v.average')}, "
           f"{contribution_sql('v.given_idf', 'v.tf', 'v.length', 'v.average')} "
           "FROM unnest(%s::float8[], %s::float8[], %s::float8[], %s::int[], %s::float8[], %s::float8[]) "
           "WITH ORDINALITY AS v(n, df, tf, length, average, given_idf, i) ORDER BY v.i")
    columns = [list(column) for column in zip(*rows)]
    with connection.cursor() as cursor:
        cursor.execute(sql, [*columns, [idf(n, df) for n, df, *_ in rows]])
        answers = cursor.fetchall()
    assert len(answers) == len(rows)
    for (n, df, tf, length, average), (sql_idf, sql_score, sql_score_given_idf) in zip(rows, answers):
        expected = contribution(idf(n, df), tf, length, average)
        assert math.isclose(sql_idf, idf(n, df), rel_tol=1e-9, abs_tol=1e-12)
        assert math.isclose(sql_score, expected, rel_tol=1e-9, abs_tol=1e-12)
        assert math.isclose(sql_score_given_idf, expected, rel_tol=1e-9, abs_tol=1e-12)
