"""``catalog_app.record_rows``: each row shape's column list is its column-backed fields in field
order, each naming a column the record model has, and the builders read what the lists select."""
import json
import uuid
from dataclasses import fields
from datetime import datetime, timezone

import pytest

from catalog_app.models import Record
from catalog_app.record_rows import (CANONICAL_COLUMNS, CANONICAL_COLUMNS_NO_BODIES, FACT_COLUMNS, PASSAGE_COLUMNS,
                                     RETRIEVAL_COLUMNS, UNREAD_COLUMNS, CanonicalRow, FactRow, PassageRow,
                                     RetrievalRow, passage_row, select_list)

RECORD_COLUMNS = {field.column for field in Record._meta.concrete_fields}
SHAPES = [(CanonicalRow, CANONICAL_COLUMNS, "run_id"), (CanonicalRow, CANONICAL_COLUMNS_NO_BODIES, "run_id"),
          (RetrievalRow, RETRIEVAL_COLUMNS, "ready"), (PassageRow, PASSAGE_COLUMNS, None),
          (FactRow, FACT_COLUMNS, None)]


@pytest.mark.parametrize("shape,columns,until", SHAPES)
def test_a_column_list_selects_one_record_column_per_leading_field(shape, columns, until):
    names = [field.name for field in fields(shape)]
    leading = names[:names.index(until) + 1] if until else names
    expressions = columns.split(", ")
    assert len(expressions) == len(leading)
    for name, expression in zip(leading, expressions):
        if expression.startswith("NULL::"):
            continue  # bodies left out, read later
        column = expression.removeprefix("r.").split("::")[0].split(" ")[0]
        assert column in RECORD_COLUMNS, f"{shape.__name__}.{name} reads {expression}, not a record column"
        assert column == name or (name, column) in {("seq", "workspace_seq"), ("ready", "enriched_at")}, expression


def test_rows_a_response_shows_carry_the_workspace_seq_and_the_search_reload_the_global_one():
    assert PASSAGE_COLUMNS.split(", ")[1] == RETRIEVAL_COLUMNS.split(", ")[1] == "r.workspace_seq"
    assert CANONICAL_COLUMNS.split(", ")[1] == "r.seq"


def test_unread_columns_are_record_columns():
    assert set(UNREAD_COLUMNS) <= RECORD_COLUMNS


def test_a_read_of_a_field_the_shape_lacks_is_refused():
    with pytest.raises(ValueError, match="FactRow reads no field"):
        select_list(FactRow, read={"seq": "r.workspace_seq"})


def test_passage_row_decodes_jsonb_read_as_text_and_keeps_parents_as_a_tuple():
    at = datetime(2026, 1, 1, tzinfo=timezone.utc)
    parent = uuid.uuid4()
    row = passage_row([uuid.uuid4(), 7, "notes", 1, "ops", "note", None, "active", "hello", json.dumps({"a": 1}),
                       {"b": 2}, [parent], at, at])
    assert (row.content, row.annotations, row.derived_from, row.seq) == ({"a": 1}, {"b": 2}, (parent,), 7)
    assert passage_row([uuid.uuid4(), 1, "n", 1, "e", "t", None, "active", "x", "{}", "{}", None, at, at]) \
        .derived_from == ()
