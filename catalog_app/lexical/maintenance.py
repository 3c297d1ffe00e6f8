"""Keeping the lexical index equal to the visible records, inside the transactions that change
visibility.

A record is *indexed* under an analyzer exactly when it is visible: live (ready, not a
tombstone) and current in its lane (``catalog_app.record_sql``). Visibility changes only when a
record is inserted (it may be visible at once, and it hides its lane's previous head) or becomes
ready (it may become visible; it hid its predecessor already when it was inserted). Both writers
call ``lexical_records_changed`` in their own transaction, so a search right after a write sees
it and a rolled-back batch leaves nothing; the backfill reconciles batches of existing records
with the same function. A reconcile writes a visible record's document (membership, group,
length) and appends every added or removed seq to the change log; an added record's postings go
into pending rows, one per term a write touches (the group travels in each packed posting), not
one per posting (``compaction`` folds them into the blocks). Once the log of a workspace is
long enough a compaction is enqueued to run after commit.

Concurrency. Whether a keyed record is current depends on its lane, so every reconcile of a
keyed record runs under the lane's entity lock (the lock ingest takes; enrichment takes it with
``lexical_lock_lanes``), after which committed writes to the lane are visible to the next
statement. Statistics rows are upserted in one fixed order (group statistics by (analyzer,
group), then source totals by (workspace, collection)), so concurrent writers wait for each
other but never deadlock; change and pending rows are new keys every time.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.db import connection

from ..record_sql import RECORD, current_in_lane, live, same_lane, source_bytes
from ..write_locks import entity_locks, workspace_lock_shared
from .analyzers import Analyzer, maintained_analyzers, stored_columns
from .compaction import lexical_compaction_due
from .compaction_task import enqueue_lexical_compaction
from .blocks import packed_rows
from .tables import CHANGE, DOCUMENT, GROUP, GROUP_COLUMNS, GROUP_STATS, PENDING, SOURCE_TOTALS, group_of, group_values


# Per record ``r``: its workspace, seq, whether it is visible, and the analyzers it is indexed under.
_STATE = (f"SELECT r.workspace_id, r.seq, ({live('r')} AND {current_in_lane('r').sql}), "
          f"ARRAY(SELECT d.analyzer FROM {DOCUMENT} d WHERE d.seq = r.seq) FROM {RECORD} r")


def lexical_records_changed(*, record_ids: Sequence, inserted: bool) -> None:
    """Reconcile the index with records ``record_ids`` (just inserted, or just made ready) and the
    lane heads they replaced, for every maintained analyzer; with ``inserted`` add the rows to
    their collections' source totals. Runs in the caller's transaction, which holds the entity
    locks of the keyed ones (ingest's, or ``lexical_lock_lanes``)."""
    ids = [str(record_id) for record_id in record_ids]
    if not ids:
        return
    with connection.cursor() as cursor:
        # The records, the lane heads they replaced, and their state, in one statement.
        cursor.execute(
            f"WITH c AS (SELECT r.* FROM {RECORD} r WHERE r.id = ANY(%s::uuid[])), "
            "x AS (SELECT c.seq FROM c UNION "
            f"SELECT p.seq FROM c CROSS JOIN LATERAL (SELECT p.seq FROM {RECORD} p "
            f"WHERE {same_lane('c', 'p')} AND p.seq < c.seq ORDER BY p.seq DESC LIMIT 1) p WHERE c.key IS NOT NULL) "
            f"{_STATE} JOIN x ON x.seq = r.seq", [ids])
        rows = cursor.fetchall()
        _reconcile(cursor, [row[1:] for row in rows])
        due = sorted(workspace_id for workspace_id in {row[0] for row in rows}
                     if lexical_compaction_due(cursor, workspace_id))
        if inserted:
            cursor.execute(
                f"INSERT INTO {SOURCE_TOTALS} AS s (workspace_id, collection, rows, bytes) "
                f"SELECT r.workspace_id, r.collection, count(*), sum({source_bytes('r')}) FROM {RECORD} r "
                "WHERE r.id = ANY(%s::uuid[]) GROUP BY 1, 2 ORDER BY 1, 2 "
                "ON CONFLICT (workspace_id, collection) DO UPDATE "
                "SET rows = s.rows + excluded.rows, bytes = s.bytes + excluded.bytes", [ids])
    if due:
        enqueue_lexical_compaction(due)


def lexical_lock_lanes(*, record_ids: Iterable) -> None:
    """Take the locks ingest takes for keyed writes (the workspace's shared lock, then the entity
    locks, in (workspace, entity) order) for the keyed records among ``record_ids``."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT DISTINCT workspace_id, entity FROM {RECORD} WHERE id = ANY(%s::uuid[]) "
                       "AND key IS NOT NULL ORDER BY 1, 2", [[str(record_id) for record_id in record_ids]])
        lanes = cursor.fetchall()
        for workspace_id in sorted({workspace_id for workspace_id, _ in lanes}):
            workspace_lock_shared(cursor, workspace_id)
            entity_locks(cursor, workspace_id, (entity for owner, entity in lanes if owner == workspace_id))


def lexical_reconcile(cursor, seqs: Sequence[int]) -> tuple[int, int]:
    """Make the index hold exactly the visible ones among records ``seqs`` (by seq), for every
    maintained analyzer; returns (documents added, documents removed). Idempotent."""
    if not seqs:
        return 0, 0
    cursor.execute(f"{_STATE} WHERE r.seq = ANY(%s)", [list(seqs)])
    return _reconcile(cursor, [row[1:] for row in cursor.fetchall()], prepare_all=True)


def _reconcile(cursor, rows: Sequence[tuple[int, bool, list[int]]], prepare_all: bool = False) -> tuple[int, int]:
    """``lexical_reconcile`` given the (seq, visible, indexed analyzers) of the records. Each
    analyzer's ``prepare`` runs for the records it adds, or with ``prepare_all`` (the backfill)
    for every one of ``rows``, so that once the backfill is done no record lacks its terms."""
    plans = []
    for analyzer in maintained_analyzers():
        add = sorted(seq for seq, visible, indexed in rows if visible and analyzer.code not in indexed)
        remove = sorted(seq for seq, visible, indexed in rows if not visible and analyzer.code in indexed)
        if add or remove:
            plans.append((analyzer, add, remove))
    added = sorted({seq for _, add, _ in plans for seq in add})
    if added:
        columns = ", ".join(GROUP_COLUMNS)
        cursor.execute(f"INSERT INTO {GROUP} ({columns}) SELECT DISTINCT {group_values('r')} FROM {RECORD} r "
                       "WHERE r.seq = ANY(%s) ORDER BY 1, 2, 3, 4, 5, 6 ON CONFLICT DO NOTHING", [added])
    for analyzer in maintained_analyzers():
        plan = next((add for planned, add, _ in plans if planned is analyzer), [])
        prepare = [seq for seq, _, _ in rows] if prepare_all else plan
        if analyzer.prepare is not None and prepare:
            analyzer.prepare(cursor, prepare)
    if plans:
        _apply(cursor, plans)
    return sum(len(add) for _, add, _ in plans), sum(len(remove) for _, _, remove in plans)


def _apply(cursor, plans: list[tuple[Analyzer, list[int], list[int]]]) -> None:
    """In one statement, for each (analyzer, seqs to ``add``, seqs to ``remove``) of ``plans``:
    append the seqs of both to the change log, store the postings of ``add`` as pending rows
    (one per workspace and term, named by the workspace's first change row of this analyzer in
    this statement), insert the documents of ``add``, delete those of ``remove``;
    then apply all of it to the group statistics, in (analyzer, group) order. ``src`` is
    materialised so each added record's group and length are computed once for its postings
    and its document. A removal writes no postings: they stay where they are, and the log tells
    a query to take them from the documents' side (``query``)."""
    parts, deltas, params = [], [], {}
    for i, (analyzer, add, remove) in enumerate(plans):
        params.update({f"analyzer{i}": analyzer.code, f"changed{i}": sorted(add + remove), f"add{i}": add,
                       f"remove{i}": remove})
        parts.append(
            f"log{i} AS (INSERT INTO {CHANGE} (workspace_id, analyzer, seq) SELECT r.workspace_id, %(analyzer{i})s,"
            f" r.seq FROM {RECORD} r WHERE r.seq = ANY(%(changed{i})s) ORDER BY r.seq RETURNING id, workspace_id),"
            f" first{i} AS (SELECT workspace_id, min(id) AS id FROM log{i} GROUP BY workspace_id),"
            f" src{i} AS MATERIALIZED (SELECT r.seq, r.workspace_id, r.id, {stored_columns('r')},"
            f" g.id AS group_id, {analyzer.length_sql} AS length FROM {RECORD} r JOIN {GROUP} g ON {group_of('r', 'g')}"
            f" WHERE r.seq = ANY(%(add{i})s)),"
            f" pending{i} AS (INSERT INTO {PENDING} (workspace_id, analyzer, term, change_id, data)"
            f" SELECT p.workspace_id, %(analyzer{i})s, p.term, f.id, p.data"
            # COLLATE "C": the grouping sort compares bytes, as the table's key does
            f" FROM (SELECT r.workspace_id, t.term COLLATE \"C\" AS term, {packed_rows('x')} AS data"
            f" FROM src{i} r {analyzer.postings_sql}"
            f" GROUP BY 1, 2) p JOIN first{i} f ON f.workspace_id = p.workspace_id),"
            f" gone{i} AS (DELETE FROM {DOCUMENT} d WHERE d.analyzer = %(analyzer{i})s AND d.seq = ANY(%(remove{i})s)"
            " RETURNING d.group_id, d.length),"
            f" new{i} AS (INSERT INTO {DOCUMENT} (seq, analyzer, workspace_id, record_id, group_id, length)"
            f" SELECT r.seq, %(analyzer{i})s, r.workspace_id, r.id, r.group_id, r.length FROM src{i} r"
            " RETURNING group_id, length)")
        deltas.append(f"SELECT %(analyzer{i})s::smallint AS analyzer, group_id, -1 AS n, -length::bigint AS len"
                      f" FROM gone{i} UNION ALL SELECT %(analyzer{i})s, group_id, 1, length::bigint FROM new{i}")
    cursor.execute(
        f"WITH {', '.join(parts)},"
        f" delta AS (SELECT analyzer, group_id, sum(n) AS docs, sum(len) AS total FROM ({' UNION ALL '.join(deltas)}) u"
        " GROUP BY analyzer, group_id)"
        f" INSERT INTO {GROUP_STATS} AS s (group_id, analyzer, docs, total_length)"
        " SELECT group_id, analyzer, docs, total FROM delta ORDER BY analyzer, group_id"
        " ON CONFLICT (group_id, analyzer) DO UPDATE"
        " SET docs = s.docs + excluded.docs, total_length = s.total_length + excluded.total_length", params)


def lexical_records_erased(cursor, *, workspace_id: int, seqs: Sequence[int]) -> int:
    """Before records ``seqs`` of workspace ``workspace_id`` are deleted for good: take the
    visible ones out of the index (documents and group statistics, as a record that stops being
    visible), fold the workspace's change log into the blocks while the rows still name their
    terms, so no block or pending row holds a posting of them, and take every one of them out of
    its collection's source totals (a collection left with none loses its row, as if it never
    had one). Returns the documents removed.

    The caller holds the workspace's exclusive write lock (no ingest or lane reconcile runs
    beside it) and has locked the rows; this takes the compaction lock, waiting for a running
    compaction, so the fold is never skipped."""
    from .compaction import lexical_compact, lock_compaction

    if not seqs:
        return 0
    seqs = sorted(seqs)
    cursor.execute(f"{_STATE} WHERE r.seq = ANY(%s)", [seqs])
    _, removed = _reconcile(cursor, [(seq, False, indexed) for _, seq, _, indexed in cursor.fetchall()])
    lock_compaction(cursor, workspace_id)
    lexical_compact(workspace_id=workspace_id)
    cursor.execute(
        f"WITH gone AS (SELECT r.collection, count(*) AS rows, sum({source_bytes('r')}) AS bytes FROM {RECORD} r "
        "WHERE r.seq = ANY(%s) GROUP BY 1 ORDER BY 1) "
        f"UPDATE {SOURCE_TOTALS} s SET rows = s.rows - gone.rows, bytes = s.bytes - gone.bytes FROM gone "
        "WHERE s.workspace_id = %s AND s.collection = gone.collection", [seqs, workspace_id])
    cursor.execute(f"DELETE FROM {SOURCE_TOTALS} WHERE workspace_id = %s AND rows <= 0", [workspace_id])
    return removed
