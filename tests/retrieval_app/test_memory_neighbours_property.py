"""``brief_neighbours.passage_neighbours`` (one statement joining the anchors laterally) equals
a brute-force oracle over the record table on Hypothesis-drawn corpora: turns (whose collection
declares ``session`` as its thread field, some with no session and some with JSON null, which are
one "no thread") and notes (no thread field) of two entities, with derived notes, keyed facts,
tombstones, drafts, unready rows and another workspace's records; any anchors among the
passages; an optional date window. The oracle: for each anchor, among the visible passages
(depth 0, events) of its collection and entity in the window carrying its thread value, the one
just before and the one just after it by ``(occurred_at, seq)``."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from django.db import transaction
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from catalog_app.catalog.runtime import catalog_for_workspace
from catalog_app.models import Workspace
from catalog_app.services.workspaces import workspace_create
from retrieval_app.memory.brief_neighbours import passage_neighbours
from tests.catalog_app.factories import record_make

from .memory_brief_factories import load
from .test_memory_grep import visible_passages

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
NO_SESSION = object()


@st.composite
def corpora(draw):
    """(own?, record fields) in write order."""
    records = []
    for _ in range(draw(st.integers(1, 30))):
        fields = {"entity": draw(st.sampled_from(("maria", "bob"))),
                  "occurred_at": T0 + timedelta(hours=draw(st.integers(0, 6)))}
        kind = draw(st.sampled_from(("turn", "turn", "turn", "note", "derived", "fact", "draft", "tombstone",
                                     "unready")))
        if kind in ("turn", "draft", "tombstone", "unready"):
            session = draw(st.sampled_from((1, 1, 2, None, NO_SESSION)))
            content = {"speaker": "x"} if session is NO_SESSION else {"speaker": "x", "session": session}
            fields.update(collection="turns", type="turn", content=content, text="t")
        else:
            fields.update(collection="profiles" if kind == "fact" else "notes", type=kind, text="n")
        if kind == "fact":
            fields["key"] = "city"
        elif kind == "derived":
            fields["depth"] = 1
        elif kind == "draft":
            fields["status"] = "draft"
        elif kind == "tombstone":
            fields["tombstone"] = True
        elif kind == "unready":
            fields["ready"] = False
        records.append((draw(st.sampled_from((True, True, True, False))), fields))
    return records


def _thread(row):
    return row.content.get("session") if row.collection == "turns" else None


def oracle(workspace, anchor, start, end) -> list:
    """The ids of the passages just before and just after ``anchor`` (each when there is one)."""
    conversation = sorted(
        (row for row in visible_passages(workspace, anchor.entity)
         if row.collection == anchor.collection and row.key is None and row.depth == 0
         and _thread(row) == _thread(anchor)
         and (start is None or row.occurred_at >= start) and (end is None or row.occurred_at < end)),
        key=lambda row: (row.occurred_at, row.seq))
    position = (anchor.occurred_at, anchor.seq)
    before = [row for row in conversation if (row.occurred_at, row.seq) < position]
    after = [row for row in conversation if (row.occurred_at, row.seq) > position]
    return [row.id for row in before[-1:]] + [row.id for row in after[:1]]


@hypothesis_settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_lateral_neighbour_statement_equals_the_oracle(workspace, data):
    # The catalogs are loaded once for all examples; each example's records are rolled back.
    if "turns" not in catalog_for_workspace(workspace).names("collection"):
        load(workspace)
    other = Workspace.objects.filter(name="other-co").first() or load(workspace_create(name="other-co")[0])
    with transaction.atomic():
        for own, fields in data.draw(corpora()):
            record_make(workspace if own else other, **fields)
        passages = [row for row in visible_passages(workspace, None) if row.key is None and row.depth == 0]
        if not passages:
            transaction.set_rollback(True)
            return
        anchors = data.draw(st.lists(st.sampled_from(passages), min_size=1, max_size=10, unique_by=lambda r: r.pk))
        start, end = (data.draw(st.one_of(st.none(), st.integers(0, 6).map(lambda h: T0 + timedelta(hours=h))))
                      for _ in range(2))
        found = passage_neighbours(workspace_id=workspace.pk, catalog=catalog_for_workspace(workspace),
                                   anchors=anchors, start=start, end=end)
        assert {anchor.id: [row.id for row in found[anchor.id]] for anchor in anchors} == \
            {anchor.id: oracle(workspace, anchor, start, end) for anchor in anchors}
        transaction.set_rollback(True)
