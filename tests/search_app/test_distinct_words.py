"""The text channel's OR query is built from ``distinct_words(q)`` (search_app.backends.pg): the
same ``@@`` and ``ts_rank_cd`` as the OR query of ``q`` itself, which stays here as the oracle,
on random documents and questions full of repeats, punctuation, hyphens and stopwords."""
from __future__ import annotations

from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from search_app.backends.pg import OR_QUERY, distinct_words

WORDS = ["lisbon", "Lisbon", "LISBON", "tram", "trams", "the", "and", "new-york", "york", "new", "2023", "9999",
         "may", "running", "ran", "café", "naïve", "o'brien", "x.y", "foo@example.com", "-", "'", "\"quoted\"",
         "((nested \"quotes\"))", "1e10", "a", "12345678901234567890"]
SEPARATORS = [" ", "  ", "\t", "\n", " , ", "; "]


def texts(max_words: int):
    return st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPARATORS)), max_size=max_words).map(
        lambda pairs: "".join(word + separator for word, separator in pairs))


def test_each_word_once_in_order_of_first_appearance():
    assert distinct_words("b a b  a\tc\nb") == "b a c"
    assert distinct_words("lisbon " * 1000) == "lisbon"
    assert distinct_words("") == "" and distinct_words(None) is None
    assert distinct_words("Lisbon lisbon") == "Lisbon lisbon"  # exact text: the parser folds case


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(document=texts(30), question=texts(40))
def test_distinct_words_rank_and_match_exactly_as_the_whole_question(db, document, question):
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT ts_rank_cd(v, {OR_QUERY}), v @@ {OR_QUERY}, ts_rank_cd(v, {OR_QUERY}), "
                       f"v @@ {OR_QUERY} FROM to_tsvector('english', %s) v",
                       [question, question, distinct_words(question), distinct_words(question), document])
        whole_rank, whole_match, distinct_rank, distinct_match = cursor.fetchone()
    assert (distinct_rank, distinct_match) == (whole_rank, whole_match)
