"""The shapes a read hands a record row on in, and the column list each is read from: one home.

Invariant: each shape's leading fields are record columns (of ``catalog_app.record_sql.RECORD``
as ``r``), and its column list is generated from those fields in field order
(``select_list``), so a row is built positionally from what its statement selected and a field
cannot be added to a shape without its column (or the other way round). Where a field is not the
column of its name the list says what it reads instead: ``seq`` of a row a response shows is
the workspace's own ordinal (``workspace_seq``, ``record_sql``'s "public seq"), ``ready`` is
``enriched_at IS NOT NULL``. Fields after the column-backed ones are computed by the read that
fills them (signals, successors).

Pure data and strings: the search engine core imports its ``CanonicalRow`` from here.
"""
from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime

PUBLIC_SEQ = "r.workspace_seq"
# What a read of whole ``Record`` models defers: derived at write time for search, shown by no
# record payload, and large (the stored tsvector and the two analyzers' term frequencies).
UNREAD_COLUMNS = ("search_vector", "bm25_tf", "en_tf")


def select_list(shape: type, *, until: str | None = None, read: Mapping[str, str] | None = None) -> str:
    """The select list of ``shape``'s fields in order (up to and including ``until``): ``r.<field>``,
    or the expression ``read`` gives for it."""
    names = [field.name for field in fields(shape)]
    if until is not None:
        names = names[:names.index(until) + 1]
    expressions = read or {}
    unknown = set(expressions) - set(names)
    if unknown:
        raise ValueError(f"{shape.__name__} reads no field {sorted(unknown)}")
    return ", ".join(expressions.get(name, f"r.{name}") for name in names)


def jsonb_value(value):
    """A jsonb column read by a raw cursor: Django's psycopg adapter hands it over as text."""
    return json.loads(value) if isinstance(value, str) else value


@dataclass(frozen=True, slots=True)
class RecordHead:
    """The leading fields of every shape that shows a record with its address: a subclass's own
    fields follow them. ``seq`` is the global one in the search reload, the workspace's own
    ordinal in every row a response shows."""

    id: uuid.UUID
    seq: int
    collection: str
    collection_version: int
    entity: str
    type: str
    key: str | None


@dataclass(frozen=True, slots=True)
class CanonicalRow(RecordHead):
    """A search candidate reloaded from the record table, with the signals the rank reads
    recomputed from canonical data (None where the mode or the rank has none)."""

    status: str
    text: str | None  # None until ``with_bodies`` when reloaded without bodies
    content: dict | None
    scores: dict
    annotations: dict
    depth: int
    occurred_at: datetime
    created_at: datetime
    last_accessed: datetime
    run_id: uuid.UUID | None
    similarity: float | None
    text_match: float | None
    bm25: float | None
    bm25_en: float | None = None


# Read in binary by the ``pg`` backend, jsonb as its text (decoded there); bodies left out (NULL)
# until the rows that are kept need them.
_CANONICAL_JSON = {"scores": "r.scores::text", "annotations": "r.annotations::text"}
CANONICAL_COLUMNS = select_list(CanonicalRow, until="run_id", read={**_CANONICAL_JSON, "content": "r.content::text"})
CANONICAL_COLUMNS_NO_BODIES = select_list(CanonicalRow, until="run_id",
                                          read={**_CANONICAL_JSON, "text": "NULL::text", "content": "NULL::text"})


@dataclass(frozen=True, slots=True)
class RetrievalRow(RecordHead):
    """A record as ``/retrieve`` shows it, with its lane successors on the request's axes."""

    text: str
    content: dict
    scores: dict
    annotations: dict
    depth: int
    derived_from: tuple[uuid.UUID, ...]
    dedupe_key: str | None
    occurred_at: datetime
    created_at: datetime
    last_accessed: datetime
    access_count: int
    ready: bool
    valid_to: datetime | None
    recorded_until: datetime | None
    superseded_by: uuid.UUID | None
    superseded_at: datetime | None


RETRIEVAL_COLUMNS = select_list(RetrievalRow, until="ready",
                                read={"seq": PUBLIC_SEQ, "ready": "r.enriched_at IS NOT NULL"})


@dataclass(frozen=True, slots=True)
class PassageRow(RecordHead):
    """A passage (or fact) as the memory lookups show it."""

    status: str
    text: str
    content: dict
    annotations: dict
    derived_from: tuple[uuid.UUID, ...]
    occurred_at: datetime
    created_at: datetime


PASSAGE_COLUMNS = select_list(PassageRow, read={"seq": PUBLIC_SEQ})


def passage_row(values: Sequence) -> PassageRow:
    """A row of ``PASSAGE_COLUMNS``, in order."""
    (record_id, seq, collection, collection_version, entity, type_, key, status, text, content, annotations, derived,
     occurred_at, created_at) = values
    return PassageRow(record_id, seq, collection, collection_version, entity, type_, key, status, text,
                      jsonb_value(content), jsonb_value(annotations), tuple(derived or ()), occurred_at, created_at)


@dataclass(frozen=True, slots=True)
class FactRow:
    """A keyed record as the brief's ``known`` shows it (attribute names match ``Record`` for
    addressing)."""

    id: uuid.UUID
    collection: str
    entity: str
    key: str
    status: str
    text: str
    occurred_at: datetime


FACT_COLUMNS = select_list(FactRow)
