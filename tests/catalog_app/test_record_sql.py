"""The lane rule of ``catalog_app.record_sql`` on one table of cases, in both its forms.

Each case writes rows in order (so ``seq`` follows the list) and names the rows current in
their lane; the SQL form (``current_in_lane``) and the ORM twin (``current_in_lane_q``) must
both select exactly those, ``superseded`` exactly the others, and ``live``/``live_q`` the
ready, non-retracted ones.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import pytest
from django.db import connection

from catalog_app.models import Record
from catalog_app.record_sql import (RECORD, as_of_cut, current_in_lane, current_in_lane_q, live, live_q,
                                    nearest_sql, record_scope, superseded, vector_literal)
from tests.catalog_app.factories import record_make

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)


def hours(offset: float) -> datetime:
    return NOW + timedelta(hours=offset)


@dataclass(frozen=True)
class Row:
    label: str
    key: str | None = "plan"
    status: str = "active"
    ready: bool = True
    tombstone: bool = False
    occurred: float = -10  # hours from NOW
    created: float = -10
    entity: str = "user-1"
    collection: str = "main"


@dataclass(frozen=True)
class Case:
    name: str
    rows: tuple[Row, ...]
    current: set[str]
    axis: str = "transaction"
    as_of: float | None = None  # hours from NOW


CASES = [
    Case("keyed: the newer value replaces the older", (Row("v1"), Row("v2")), {"v2"}),
    Case("events have no lane", (Row("e1", key=None), Row("e2", key=None)), {"e1", "e2"}),
    Case("keyed beside events: only the keyed lane collapses",
         (Row("e1", key=None), Row("v1"), Row("v2"), Row("e2", key=None)), {"e1", "v2", "e2"}),
    Case("draft and active are separate lanes",
         (Row("a1"), Row("d1", status="draft"), Row("a2"), Row("d2", status="draft")), {"a2", "d2"}),
    Case("a draft never hides the active value", (Row("a1"), Row("d1", status="draft")), {"a1", "d1"}),
    Case("an unready newer value already hides the older", (Row("v1"), Row("v2", ready=False)), {"v2"}),
    Case("a tombstone is the current row of its lane", (Row("v1"), Row("t", tombstone=True)), {"t"}),
    Case("a value after a tombstone revives the lane",
         (Row("v1"), Row("t", tombstone=True), Row("v2")), {"v2"}),
    Case("entity, collection and key each make their own lane",
         (Row("a"), Row("b", entity="user-2"), Row("c", collection="profiles"), Row("d", key="other"),
          Row("a2")), {"a2", "b", "c", "d"}),
    Case("transaction axis: a backdated correction still replaces",
         (Row("v1", occurred=-5), Row("v2", occurred=-20)), {"v2"}),
    Case("valid axis: a backdated correction is older in domain time",
         (Row("v1", occurred=-5), Row("v2", occurred=-20)), {"v1"}, axis="valid"),
    Case("valid axis: equal domain times fall back to seq",
         (Row("v1", occurred=-5), Row("v2", occurred=-5)), {"v2"}, axis="valid"),
    Case("valid axis as of: a successor after the instant does not count",
         (Row("v1", occurred=-20), Row("v2", occurred=-5)), {"v1", "v2"}, axis="valid", as_of=-10),
    Case("valid axis as of: a successor before the instant counts",
         (Row("v1", occurred=-20), Row("v2", occurred=-15)), {"v2"}, axis="valid", as_of=-10),
    Case("valid axis as of: created after the instant still counts (domain time decides)",
         (Row("v1", occurred=-20, created=-20), Row("v2", occurred=-15, created=-1)), {"v2"}, axis="valid",
         as_of=-10),
    Case("transaction axis as of: a value written after the instant is unknown",
         (Row("v1", created=-20), Row("v2", created=-5)), {"v1", "v2"}, as_of=-10),
    Case("transaction axis as of: a value written before the instant replaces",
         (Row("v1", created=-20), Row("v2", created=-15)), {"v2"}, as_of=-10),
    Case("transaction axis as of: a tombstone written before the instant hides, a later value does not",
         (Row("v1", created=-20), Row("t", tombstone=True, created=-15), Row("v2", created=-1)), {"t", "v2"},
         as_of=-10),
]


def _write(workspace, rows: tuple[Row, ...]) -> dict:
    ids = {}
    for row in rows:
        record = record_make(workspace, key=row.key, status=row.status, ready=row.ready, tombstone=row.tombstone,
                             entity=row.entity, collection=row.collection,
                             type="profile" if row.collection == "profiles" else "note")
        # The factory stamps now; the case needs its own instants on both axes.
        Record.objects.filter(pk=record.pk).update(occurred_at=hours(row.occurred), created_at=hours(row.created))
        ids[record.pk] = row.label
    return ids


def _sql_labels(workspace, ids: dict, condition, params=()) -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT r.id FROM {RECORD} r WHERE r.workspace_id = %s AND {condition}",
                       [workspace.pk, *params])
        return {ids[row[0]] for row in cursor.fetchall()}


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_current_in_lane_sql_and_orm_agree_with_the_table(catalog, case):
    ids = _write(catalog, case.rows)
    as_of = None if case.as_of is None else hours(case.as_of)

    current = current_in_lane(axis=case.axis, as_of=as_of)
    hidden = superseded(axis=case.axis, as_of=as_of)
    orm = Record.objects.filter(current_in_lane_q(axis=case.axis, as_of=as_of), workspace=catalog)

    assert _sql_labels(catalog, ids, current.sql, current.params) == case.current
    assert {ids[pk] for pk in orm.values_list("pk", flat=True)} == case.current
    assert _sql_labels(catalog, ids, hidden.sql, hidden.params) == set(ids.values()) - case.current


@pytest.mark.parametrize("axis, as_of, shown", [
    ("valid", -10, {"v1"}),  # v2 happened after the instant
    ("transaction", -10, {"v1"}),  # v2 was not yet written
    ("valid", None, {"v2"}),
])
def test_as_of_cut_and_lane_rule_give_the_store_as_it_was(catalog, axis, as_of, shown):
    ids = _write(catalog, (Row("v1", occurred=-20, created=-20), Row("v2", occurred=-5, created=-5)))
    instant = None if as_of is None else hours(as_of)
    clause = as_of_cut(axis, instant) & current_in_lane(axis=axis, as_of=instant)
    assert _sql_labels(catalog, ids, clause.sql, clause.params) == shown


def test_live_is_ready_and_not_retracted_in_both_forms(catalog):
    ids = _write(catalog, (Row("ready", key=None), Row("unready", key=None, ready=False),
                           Row("retracted", key="k", tombstone=True)))
    assert _sql_labels(catalog, ids, live()) == {"ready"}
    assert {ids[pk] for pk in Record.objects.filter(live_q(), workspace=catalog).values_list("pk", flat=True)} \
        == {"ready"}


def test_record_scope_with_current_is_live_and_current(catalog):
    ids = _write(catalog, (Row("v1"), Row("v2"), Row("g1", key="gone"), Row("g2", key="gone", tombstone=True),
                           Row("u", key="later", ready=False), Row("p", collection="profiles")))
    clause = record_scope(workspace_id=catalog.pk, collection_versions={"main": [1]}, current=True)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT r.id FROM {RECORD} r WHERE {clause.sql}", list(clause.params))
        assert {ids[row[0]] for row in cursor.fetchall()} == {"v2"}


def test_an_unknown_axis_is_refused():
    with pytest.raises(ValueError, match="unknown time axis"):
        current_in_lane(axis="domain")


@pytest.mark.parametrize("space", ["Upper", "has space", "quote'd", ""])
def test_a_space_name_that_could_not_be_a_literal_is_refused(space):
    with pytest.raises(ValueError, match="invalid embedding space"):
        nearest_sql(columns="r.id", space=space, dimensions=8, where="TRUE")


def test_vector_literal_is_the_pgvector_text_form():
    assert vector_literal([1, 0.5, -2]) == "[1.0,0.5,-2.0]"
