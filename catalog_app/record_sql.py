"""The record table's rules, in one place: every query over records takes them from here.

Each rule has a SQL form (a fragment over a row alias, ``r`` unless told) and, where ORM call
sites need it, an ORM twin that selects the same rows; ``tests/catalog_app/test_record_sql.py``
checks the two against each other on one table of cases.

* Table names come from the models (``RECORD``, ``EMBEDDING``); no other module spells them.
* **live**: ready (``enriched_at`` set) and not retracted (not a tombstone).
* **lane**: the rows of one ``(workspace, entity, collection, key, status)``. Events (``key``
  NULL) have no lane.
* **current in lane**: no row of the record's lane comes after it. A successor counts whether
  it is ready or not (an unready newer value already hides the older one) and whether it is a
  tombstone or not. Events are always current. "After" is on an axis: ``transaction``
  (ingestion order, ``seq``) or ``valid`` (domain time, ``(occurred_at, seq)``). With an
  ``as_of`` only successors inside that slice count: ``occurred_at <= as_of`` on the valid
  axis, ``created_at <= as_of`` on the transaction axis (``as_of_cut``; ``/retrieve`` applies
  the same cut to the row itself).
* **public seq**: a response's ``seq`` (and a ``before_seq`` cursor) is the workspace's own
  ordinal ``workspace_seq``, never the global ``seq``, whose gaps would show how much other
  workspaces write (``PUBLIC_SEQ``, ``before_public_seq_q``). Within one workspace both sort
  alike, so queries keep ordering by ``seq``.
* **record scope**: the workspace first, then live, then the narrowing conditions; no
  condition may widen it.
* **id arrays**: a list of ids or seqs is bound as one array literal (``id_array``).
* **vectors**: a query vector is written as a pgvector literal and passed as a parameter;
  the space name is written verbatim (the planner matches it against the space's partial HNSW
  index), so it must be a valid ``SPACE_NAME``. An HNSW scan runs inside one transaction with
  ``hnsw.ef_search`` set to its pool size (clamped to 40..1000) and relaxed-order iterative
  scans, so a filtered scan still fills its pool.

Values are always parameters; the only text written into SQL is aliases, validated names and
integers.
"""
from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce

from .catalog.checks import SPACE_NAME
from .models import Record, RecordEmbedding

RECORD = Record._meta.db_table
# The column a response shows as ``seq`` (see "public seq" above).
PUBLIC_SEQ = "workspace_seq"
# Above every seq PostgreSQL's bigint holds.
_PAST_EVERY_SEQ = 2**63 - 1
EMBEDDING = RecordEmbedding._meta.db_table
AXES = ("valid", "transaction")
_LANE = ("workspace_id", "entity", "collection", "key", "status")
_AS_OF_COLUMN = {"valid": "occurred_at", "transaction": "created_at"}


@dataclass(frozen=True, slots=True)
class Clause:
    """A SQL condition and its parameters, in placeholder order."""

    sql: str
    params: tuple = ()

    def __and__(self, other: "Clause") -> "Clause":
        return Clause(f"({self.sql}) AND ({other.sql})", self.params + other.params)


TRUE, FALSE = Clause("TRUE"), Clause("FALSE")


# --- live ------------------------------------------------------------------------------------

def live(alias: str = "r") -> str:
    """SQL: the row is ready and not retracted."""
    return f"{alias}.enriched_at IS NOT NULL AND NOT {alias}.tombstone"


def live_q() -> Q:
    """ORM twin of ``live``."""
    return Q(enriched_at__isnull=False, tombstone=False)


# --- lanes -----------------------------------------------------------------------------------

def same_lane(alias: str, other: str) -> str:
    """SQL: row ``other`` is in the lane of row ``alias`` (never true for an event)."""
    return " AND ".join(f"{other}.{column} = {alias}.{column}" for column in _LANE)


def lane_of(record: Record, *, status: str | None = None) -> Q:
    """ORM: the rows of ``record``'s lane, or of the ``status`` lane of its slot."""
    return Q(workspace_id=record.workspace_id, entity=record.entity, collection=record.collection, key=record.key,
             status=record.status if status is None else status)


def successor(axis: str, alias: str = "r", other: str = "n") -> str:
    """SQL: row ``other`` comes after row ``alias`` on ``axis``."""
    if axis == "valid":
        return f"({other}.occurred_at, {other}.seq) > ({alias}.occurred_at, {alias}.seq)"
    _check_axis(axis)
    return f"{other}.seq > {alias}.seq"


def as_of_cut(axis: str, as_of: datetime | None, alias: str = "r") -> Clause:
    """SQL: row ``alias`` belongs to the store slice ``as_of`` on ``axis`` (TRUE without one)."""
    _check_axis(axis)
    if as_of is None:
        return TRUE
    return Clause(f"{alias}.{_AS_OF_COLUMN[axis]} <= %s", (as_of,))


def _newer_in_lane(alias: str = "r", *, axis: str = "transaction", as_of: datetime | None = None,
                   newer: str = "newer") -> Clause:
    """SQL ``EXISTS``: some row of ``alias``'s lane, within the ``as_of`` slice, comes after it."""
    conditions = [same_lane(alias, newer), successor(axis, alias, newer)]
    cut = as_of_cut(axis, as_of, newer)
    if as_of is not None:
        conditions.append(cut.sql)
    return Clause(f"EXISTS (SELECT 1 FROM {RECORD} {newer} WHERE {' AND '.join(conditions)})", cut.params)


def current_in_lane(alias: str = "r", *, axis: str = "transaction", as_of: datetime | None = None,
                    newer: str = "newer") -> Clause:
    """SQL: row ``alias`` is current in its lane (module docstring); events always are."""
    exists = _newer_in_lane(alias, axis=axis, as_of=as_of, newer=newer)
    return Clause(f"({alias}.key IS NULL OR NOT {exists.sql})", exists.params)


def superseded(alias: str = "r", *, axis: str = "transaction", as_of: datetime | None = None,
               newer: str = "newer") -> Clause:
    """SQL: the negation of ``current_in_lane``: a keyed row with a successor in its lane."""
    exists = _newer_in_lane(alias, axis=axis, as_of=as_of, newer=newer)
    return Clause(f"({alias}.key IS NOT NULL AND {exists.sql})", exists.params)


def current_in_lane_q(*, axis: str = "transaction", as_of: datetime | None = None) -> Exists:
    """ORM twin of ``current_in_lane``. ``key = NULL`` never matches, so an event is never hidden."""
    newer = Record.objects.filter(**{column: OuterRef(column) for column in _LANE})
    if axis == "valid":
        newer = newer.filter(Q(occurred_at__gt=OuterRef("occurred_at"))
                             | Q(occurred_at=OuterRef("occurred_at"), seq__gt=OuterRef("seq")))
    else:
        _check_axis(axis)
        newer = newer.filter(seq__gt=OuterRef("seq"))
    if as_of is not None:
        newer = newer.filter(**{f"{_AS_OF_COLUMN[axis]}__lte": as_of})
    return ~Exists(newer)


def before_public_seq_q(*, workspace_id: int, before: int) -> Q:
    """ORM: the workspace's rows whose public ``seq`` is below ``before``, as a bound on the global
    ``seq`` (the first row at or past ``before``), so the ``(…, seq)`` indexes serve the page."""
    first_past = (Record.objects.filter(workspace_id=workspace_id, workspace_seq__gte=before)
                  .order_by("workspace_seq").values("seq")[:1])
    return Q(seq__lt=Coalesce(Subquery(first_past), Value(_PAST_EVERY_SEQ)))


def _check_axis(axis: str) -> None:
    if axis not in AXES:
        raise ValueError(f"unknown time axis {axis!r}; one of {', '.join(AXES)}")


# --- scope -----------------------------------------------------------------------------------

def record_scope(*, workspace_id: int, collection_versions: Mapping[str, Sequence[int]],
                 entities: Sequence[str] | None = None, types: Sequence[str] | None = None, status: str = "all",
                 keyed: bool | None = None, occurred_after: datetime | None = None,
                 occurred_before: datetime | None = None, depth_lte: int | None = None, current: bool = False,
                 alias: str = "r") -> Clause:
    """SQL: the rows of the workspace that are live, in one of ``collection_versions`` (name ->
    versions) and meet every given condition; ``current`` keeps only rows current in their lane
    (transaction axis). ``status`` ``all`` admits both lanes."""
    r = alias
    parts = [f"{r}.workspace_id = %s", live(r)]
    params: list = [workspace_id]
    groups = []
    for name, versions in sorted(collection_versions.items()):
        groups.append(f"({r}.collection = %s AND {r}.collection_version = ANY(%s))")
        params.extend([name, list(versions)])
    parts.append("(" + " OR ".join(groups) + ")")
    if entities is not None:
        parts.append(f"{r}.entity = ANY(%s)")
        params.append(list(entities))
    if types is not None:
        parts.append(f"{r}.type = ANY(%s)")
        params.append(list(types))
    if status != "all":
        parts.append(f"{r}.status = %s")
        params.append(status)
    if keyed is True:
        parts.append(f"{r}.key IS NOT NULL")
    elif keyed is False:
        parts.append(f"{r}.key IS NULL")
    if occurred_after is not None:
        parts.append(f"{r}.occurred_at > %s")
        params.append(occurred_after)
    if occurred_before is not None:
        parts.append(f"{r}.occurred_at < %s")
        params.append(occurred_before)
    if depth_lte is not None:
        parts.append(f"{r}.depth <= %s")
        params.append(depth_lte)
    if current:
        parts.append(current_in_lane(r).sql)
    return Clause(" AND ".join(parts), tuple(params))


# --- id arrays -------------------------------------------------------------------------------

def id_array(values: Iterable) -> str:
    """PostgreSQL's text form of an array of integers or of UUIDs (``{1,2,3}``), bound as one
    string for a ``%s::bigint[]``, ``%s::integer[]`` or ``%s::uuid[]`` parameter. psycopg dumps
    a list element by element, which costs milliseconds for the hundreds of ids a reload sends
    and the thousands a compaction does; these values' text never needs quoting."""
    values = list(values)
    if values and isinstance(values[0], uuid.UUID):
        return "{" + ",".join([value.hex for value in values]) + "}"
    return "{" + ",".join(map(str, map(int, values))) + "}"


# --- vectors ---------------------------------------------------------------------------------

def vector_literal(values: Sequence[float]) -> str:
    """The pgvector text form of ``values`` (passed as a parameter, cast with ``::vector(n)``)."""
    return "[" + ",".join(repr(float(v)) for v in values) + "]"


def vector_distance(dimensions: int, alias: str = "e") -> str:
    """SQL: cosine distance of ``alias``'s embedding to the query vector (one parameter: its
    literal), in the form the space's HNSW index is built over."""
    dims = int(dimensions)
    return f"{alias}.embedding::vector({dims}) <=> %s::vector({dims})"


def space_literal(space: str) -> str:
    """The space name as a SQL string literal; raises ``ValueError`` unless it is a valid space name."""
    if not SPACE_NAME.fullmatch(space):
        raise ValueError(f"invalid embedding space {space!r}")
    return f"'{space}'"


def embedding_rows(space: str, where: str) -> str:
    """SQL ``FROM ... WHERE``: the embeddings ``e`` of ``space`` in the workspace, joined to
    their records ``r`` satisfying ``where``. Parameters: workspace, then ``where``'s."""
    return (f"FROM {EMBEDDING} e JOIN {RECORD} r ON r.id = e.record_id "
            f"WHERE e.space = {space_literal(space)} AND e.workspace_id = %s AND {where}")


def nearest_sql(*, columns: str, space: str, dimensions: int, where: str, exact: bool = False) -> str:
    """SQL: ``columns`` of the records under ``where`` nearest the query vector in ``space``, at
    most a limit. ``exact`` compares every row (cheaper for a small scope): the distance is sorted
    as ``(distance) + 0``, an expression no index provides, so the planner cannot walk the HNSW
    index (an approximate walk that may stop short of the scope's rows) even under an
    incremental sort, and ``r.seq DESC`` breaks ties. Parameters: ``columns``'s, workspace,
    ``where``'s, the vector literal, the limit."""
    distance = vector_distance(dimensions)
    order = f"({distance}) + 0, r.seq DESC" if exact else distance
    return f"SELECT {columns} {embedding_rows(space, where)} ORDER BY {order} LIMIT %s"


@contextmanager
def nearest_scan(pool: int, *, exact: bool = False) -> Iterator:
    """The cursor a ``nearest_sql`` statement of the same ``exact`` runs on: a plain one for an
    exact comparison, else one inside a transaction whose HNSW settings are those of a pool of
    ``pool`` rows."""
    if exact:
        with connection.cursor() as cursor:
            yield cursor
        return
    # set_config(..., true) lasts until the end of the transaction, so the scan must run in it.
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('hnsw.ef_search', %s, true), "
                       "set_config('hnsw.iterative_scan', 'relaxed_order', true)", [str(max(40, min(pool, 1000)))])
        yield cursor


def source_bytes(alias: str = "r") -> str:
    """The serialized size of a source row as lexical scan budgets count it (lexical-search.md,
    ``scanned_bytes``): the UTF-8 bytes of the record's text plus those of its content as JSON
    text. One definition, so a scan and any maintained total agree byte for byte."""
    return f"(octet_length({alias}.text) + octet_length({alias}.content::text))"
