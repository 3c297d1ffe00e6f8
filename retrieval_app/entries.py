"""How one delivered record looks in a MemoryContext section.

An entry is ``{id, text, rendered, entity, collection, type, key, score, tokens, provenance,
validFrom, validTo, recordedAt, recordedUntil, [supersededAt, supersededBy], policy, version,
trust, [explanation]}``:

* ``rendered`` is the compact, escaped row of the search engine (``render_row``: text
  middle-truncated to 500 characters), the text meant for a prompt; ``tokens`` is its cl100k
  count and is what the budget charges;
* provenance: ``sourceKind`` ``derived`` for depth > 0 else ``ingested``; ``sourceRef`` the
  record's ``dedupe_key``, else its first ``derived_from`` id, else null; ``extractionMethod``
  ``derivation`` for depth > 0 else ``client``;
* bi-temporal fields: valid time ``occurred_at`` → its valid-time successor's ``occurred_at``;
  transaction time ``created_at`` → its transaction-time successor's ``created_at`` (see
  ``retrieval_app.canonical_rows``); ``supersededAt``/``supersededBy`` only when superseded records are
  shown;
* policy fields from ``conf/retrieval.yaml`` (a missing visibility value reads ``shared``);
* version ``{collection, collectionVersion, seq}``; trust from ``scoring.trust``.
"""
from __future__ import annotations

from datetime import datetime

from catalog_app.catalog.registry import Catalog
from catalog_app.record_rows import RetrievalRow
from search_app.engine.recheck import raw_value
from search_app.engine.render import render_row
from search_app.engine.resolve import FieldAccess, field_paths
from search_app.engine.rendered_rows import render_row_of
from search_app.engine.tokens import count_tokens

from .policy import RetrievalPolicy, Source


def section_of(row: RetrievalRow, policy_collections: frozenset[str]) -> str:
    if row.collection in policy_collections:
        return "policies"
    if row.depth > 0:
        return "derived"
    return "facts" if row.key is not None else "events"


def rendered_row(row: RetrievalRow, score_names: tuple[str, ...]) -> tuple[str, int]:
    text = render_row(render_row_of(row, score_names))
    return text, count_tokens(text)


def policy_fields(row: RetrievalRow, catalog: Catalog, policy: RetrievalPolicy) -> dict:
    spec = policy.of(row.collection)
    visibility = _value(row, catalog, spec.visibility) or "shared"
    owner = _value(row, catalog, Source(field=spec.owner_agent_id)) if spec.owner_agent_id else None
    return {"visibility": visibility, "ownerAgentId": owner, "classification": _value(row, catalog,
                                                                                       spec.classification)}


def _value(row: RetrievalRow, catalog: Catalog, source: Source):
    if source.field is None:
        return source.literal
    definition = catalog.get("collection", row.collection, row.collection_version)
    declared = definition.value.fields.get(source.field) if definition is not None else None
    if declared is None:
        return None
    value = raw_value(row, FieldAccess(declared, field_paths(declared, catalog)))
    return value if isinstance(value, str) else None


def entry(row: RetrievalRow, *, score: float | None, rendered: str, tokens: int, policy: dict, trust: dict,
          show_superseded: bool) -> dict:
    derived = row.depth > 0
    source_ref = row.dedupe_key or (str(row.derived_from[0]) if row.derived_from else None)
    body = {
        "id": str(row.id), "text": row.text, "rendered": rendered, "entity": row.entity,
        "collection": row.collection, "type": row.type, "key": row.key, "score": score, "tokens": tokens,
        "provenance": {"sourceKind": "derived" if derived else "ingested", "sourceRef": source_ref,
                       "extractionMethod": "derivation" if derived else "client"},
        "validFrom": _iso(row.occurred_at), "validTo": _iso(row.valid_to),
        "recordedAt": _iso(row.created_at), "recordedUntil": _iso(row.recorded_until),
    }
    if show_superseded:
        body["supersededAt"] = _iso(row.superseded_at)
        body["supersededBy"] = str(row.superseded_by) if row.superseded_by is not None else None
    body.update({"policy": policy,
                 "version": {"collection": row.collection, "collectionVersion": row.collection_version,
                             "seq": row.seq},
                 "trust": trust})
    return body


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None
