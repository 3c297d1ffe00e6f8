"""The one shape of a passage result, and how a passage's roles (who spoke) are read.

Every memory route that returns a passage returns ``hit_shape``'s dict, so the brief and the
lookups agree on it: ``id``, ``path`` (the passage address), ``roles``, ``text`` (its first
``HIT_TEXT_CHARS`` characters; ``truncated`` says whether it was cut, and ``/memory/read`` gives
it whole), ``content: "stored"`` and ``occurred_at``. Records are read by attribute (``id``,
``collection``, ``entity``, ``text``, ``occurred_at``; ``content``, ``annotations`` and
``collection_version`` for roles), so a ``Record`` and a selector's row both fit.
"""
from __future__ import annotations

from catalog_app.catalog.collections import Collection, DeclaredField
from catalog_app.catalog.registry import Catalog

from .addresses import passage_path

HIT_TEXT_CHARS = 1400


def hit_shape(record, roles) -> dict:
    """The result dict of one passage; ``roles`` is what ``passage_roles`` returned for it."""
    text = record.text
    return {"id": str(record.id), "path": passage_path(record), "roles": list(roles),
            "text": text[:HIT_TEXT_CHARS], "truncated": len(text) > HIT_TEXT_CHARS, "content": "stored",
            "occurred_at": record.occurred_at.isoformat()}


def passage_roles(record, catalog: Catalog) -> tuple[str, ...]:
    """Who spoke ``record``: the value of its collection version's ``role_field`` (one role), or
    none when the collection declares no role field or the record does not carry a string there."""
    collection = collection_of(record, catalog)
    if collection is None or collection.role_field is None:
        return ()
    value = declared_value(record, collection.fields[collection.role_field])
    return (value,) if isinstance(value, str) and value else ()


def thread_of(record, catalog: Catalog):
    """The value of ``record``'s thread field, or ``None`` when none is declared or set."""
    collection = collection_of(record, catalog)
    if collection is None or collection.thread_field is None:
        return None
    return declared_value(record, collection.fields[collection.thread_field])


def collection_of(record, catalog: Catalog) -> Collection | None:
    return catalog.value("collection", record.collection, record.collection_version)


def declared_value(record, field: DeclaredField):
    """The value at ``field``'s path in the record's content or annotations (``None``: absent)."""
    node = getattr(record, field.path[0])
    for part in field.path[1:]:
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node
