"""The positive cases ``bench.schema_fuzz`` sets aside (rules the document states beside its
schemas) agree with the SearchSpec parser: the query-signal rule on the parser's own table rows."""
from __future__ import annotations

import pytest

from bench.schema_fuzz import _search_spec_rule_broken
from tests.search_app.test_spec import BY_ID, VALID

SIGNAL_ROWS = ("rank-similarity-in-recent", "rank-similarity-in-text", "rank-bm25-deep-in-vector",
               "rank-text-match-in-recent", "source-rank-similarity-in-recent", "source-rank-bm25-in-vector",
               "boost-similarity", "boost-text-match")


@pytest.mark.parametrize("row_id", SIGNAL_ROWS)
def test_a_signal_outside_its_modes_is_set_aside(row_id):
    assert not BY_ID[row_id].structural
    assert _search_spec_rule_broken(BY_ID[row_id].body) == "a query signal only in the modes that compute it"


@pytest.mark.parametrize("body", VALID)
def test_no_valid_spec_is_set_aside(body):
    assert _search_spec_rule_broken(body) is None
