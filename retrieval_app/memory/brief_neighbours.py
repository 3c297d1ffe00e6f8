"""Strong hits lend to their neighbours: the passage ranking of ``POST /memory/search``.

In a conversation the words that match a question and the words that answer it are often in
adjacent turns ("Did you go to the lighthouse festival?" / "Yes, last weekend, the kids loved
it"). So after the fused ranking, the first ``strong`` passages (the hits the fused ranking
alone would show) each lend ``share`` of their score to the passage directly before and the
passage directly after them in the same conversation, inside the search's window:

    score(p) = own(p) + share * max(own(s) for each strong passage s beside p)

where ``own`` is the fused rank value of a candidate and 0 for a passage that was no candidate
(the rank expression's normalised terms are never negative, so 0 is "no signal"). Passages are
then ordered by score; equal scores keep the fused order, and neighbours that were no candidate
follow every candidate of equal score, in the order they were reached. ``share`` 0 leaves the
fused ranking unchanged. The rule is ``lend_to_neighbours`` (pure); ``passage_neighbours``
reads the neighbours (the same conversation as ``GET /memory/around``: same collection and
entity, events only, the same thread value when the collection declares a thread field, ordered
by ``occurred_at`` then ``seq``), restricted to the window and to passages (depth 0).
"""
from __future__ import annotations

import json
from collections.abc import Hashable, Mapping, Sequence
from datetime import datetime

from django.db import connection

from catalog_app.catalog.registry import Catalog
from catalog_app.record_rows import PASSAGE_COLUMNS, passage_row
from catalog_app.record_sql import RECORD, Clause

from .addresses import MemoryPath
from .dates import DateWindow
from .passages import passage_scope, thread_of


def lend_to_neighbours(ranked: Sequence[tuple[Hashable, float]], neighbours: Mapping[Hashable, Sequence[Hashable]],
                       *, strong: int, share: float) -> list[Hashable]:
    """The ids of ``ranked`` (``(id, fused value)`` in fused order) and of the strong passages'
    neighbours, in lent order (the module docstring's rule). ``neighbours`` maps each of the first
    ``strong`` ids to the ids beside it (absent or empty: none)."""
    own = dict(ranked)
    lent: dict[Hashable, float] = {}
    for record_id, value in ranked[:strong]:
        for neighbour in neighbours.get(record_id, ()):
            lent[neighbour] = max(lent.get(neighbour, 0.0), value)
    order = [record_id for record_id, _ in ranked] + [n for n in lent if n not in own]
    score = {record_id: own.get(record_id, 0.0) + share * lent.get(record_id, 0.0) for record_id in order}
    return sorted(order, key=lambda record_id: -score[record_id])  # stable: ties keep ``order``


def passage_neighbours(*, workspace_id: int, catalog: Catalog, anchors: Sequence, start: datetime | None,
                       end: datetime | None) -> dict:
    """{anchor id: [the passage before it, the passage after it]} (either may be missing) for
    ``anchors`` (rows read by attribute: ``id``, ``seq``, ``collection``, ``entity``,
    ``occurred_at``, ``content``, ``annotations``, ``collection_version``), each neighbour a
    ``PassageRow`` in ``[start, end)``. One statement per collection and thread field among the
    anchors (usually one), planned once whatever the number of anchors: the anchors are a
    ``VALUES`` list that two ``LIMIT 1`` probes join laterally."""
    found: dict = {anchor.id: [] for anchor in anchors}
    groups: dict[tuple, list] = {}
    for anchor in anchors:
        thread = thread_of(anchor, catalog)
        field = None if thread is None else thread[:2]
        groups.setdefault((anchor.collection, field), []).append((anchor, None if thread is None else thread[2]))
    window = DateWindow(start, end)
    for (collection, field), members in groups.items():
        sql, params = _neighbour_statement(workspace_id, catalog, collection, field, members, window)
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            for anchor_id, *values in cursor.fetchall():
                found[anchor_id].append(passage_row(values))
    return found


def _neighbour_statement(workspace_id: int, catalog: Catalog, collection: str, field, members, window: DateWindow):
    scope = passage_scope(workspace_id=workspace_id, catalog=catalog, path=MemoryPath("passages", collection),
                          window=window) & Clause("r.key IS NULL AND r.depth = 0 AND r.entity = a.entity")
    if field is not None:
        column, keys = field
        # A missing value and JSON null are one "no thread", as in ``same_thread``.
        scope = scope & Clause(f"COALESCE(r.{column} #> %s, 'null'::jsonb) = a.thread", (list(keys),))
    rows = ", ".join(["(%s::uuid, %s::text, %s::timestamptz, %s::bigint, %s::jsonb)"] * len(members))
    values = [v for anchor, thread in members
              for v in (anchor.id, anchor.entity, anchor.occurred_at, anchor.seq, json.dumps(thread))]
    probes = [f"(SELECT {PASSAGE_COLUMNS} FROM {RECORD} r WHERE {scope.sql} AND (r.occurred_at, r.seq) {comparison} "
              f"(a.occurred_at, a.seq) ORDER BY r.occurred_at {direction}, r.seq {direction} LIMIT 1)"
              for comparison, direction in (("<", "DESC"), (">", "ASC"))]
    sql = (f"SELECT a.anchor, n.* FROM (VALUES {rows}) AS a(anchor, entity, occurred_at, seq, thread) "
           f"CROSS JOIN LATERAL ({probes[0]} UNION ALL {probes[1]}) n")
    return sql, [*values, *scope.params, *scope.params]
