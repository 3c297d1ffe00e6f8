"""``MemseekStore``: LangGraph's ``BaseStore`` over Memseek's named facts.

One store is one collection (``keyed`` or ``mixed``). A namespace is an entity: its labels
joined by ``.`` (LangGraph forbids ``.`` inside a label, so the mapping is one to one), so
``("contact", "maria")`` is entity ``contact.maria``. An item is the current value of one keyed
lane ``(entity, collection, key)``:

- ``put`` writes a successor record (Memseek never updates in place; earlier values stay in
  the fact's history) with ``content = {"text": <text>, "value": <the item's value>}``. The text
  is what search and the embedding read: the ``index`` fields' text when given, else
  ``value["text"]`` when it is a string, else the value as sorted JSON.
- ``get`` reads the lane's newest active version (``GET /document/history``, then ``GET
  /records/{id}``), so a value still being enriched is already returned; a record written by
  anything but this store reads as its whole ``content``.
- ``delete`` (``put`` of ``None``) forgets the fact for good: ``DELETE /records/{id}`` erases
  every version of the lane and what was derived from it. With ``forget=False`` it writes a
  tombstone instead: the fact is retracted, its history keeps every earlier value.
- ``search`` without a query lists the current facts under a namespace prefix (by entity, then
  key); with one it is ``POST /search`` over the current facts, in the search's order, so
  ``offset + limit`` reaches at most the 100 best. ``filter`` is applied to the values here,
  after the page is fetched, with the operators LangGraph documents (``$eq $ne $gt $gte $lt
  $lte``).
- ``list_namespaces`` lists the entities holding facts in the collection.

``created_at`` and ``updated_at`` of an item are both the time its current value was written: a
Memseek record is never changed, each value is a record of its own. TTLs are not supported.
"""
from __future__ import annotations

import asyncio
import json
import operator
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from langgraph.store.base import (BaseStore, GetOp, Item, ListNamespacesOp, MatchCondition, Op, PutOp, Result,
                                  SearchItem, SearchOp, get_text_at_path)

from .. import MemseekClient, NotFound, RecordInput
from ..models import DocumentVersion

_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": operator.eq, "$ne": operator.ne, "$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt,
    "$lte": operator.le}
_ESCAPED = {"%": "%25", "/": "%2F", **{chr(code): f"%{code:02X}" for code in (*range(1, 32), 127)}}
SEARCH_PAGE = 100  # the most hits one /search returns


class MemseekStore(BaseStore):
    """A LangGraph store on ``client`` over ``collection``'s named facts (module docstring).

    ``record_type`` is the type of the records ``put`` writes; ``mode`` is the ``/search`` mode
    of a query (``hybrid``, ``vector`` or ``text``); ``forget`` chooses what ``delete`` does
    (module docstring)."""

    supports_ttl = False

    def __init__(self, client: MemseekClient, *, collection: str = "main", record_type: str = "store_item",
                 mode: str = "hybrid", forget: bool = True) -> None:
        self.client = client
        self.forget = forget
        self.collection = collection
        self.record_type = record_type
        self.mode = mode

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return [self._run(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        # The sync client in a worker thread: one call at a time, as ``batch`` makes them.
        return await asyncio.to_thread(self.batch, list(ops))

    def _run(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op.namespace, op.key)
        if isinstance(op, PutOp):
            if op.ttl is not None:
                raise NotImplementedError("MemseekStore keeps every value: TTLs are not supported (ttl=None)")
            if op.value is None:
                self._delete(op.namespace, op.key)
            else:
                self._put(op.namespace, op.key, op.value, op.index)
            return None
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise TypeError(f"unknown store operation {type(op).__name__}")

    # --- one item ----------------------------------------------------------------------------

    def _put(self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any],
             index: list[str] | bool | None) -> None:
        self.client.write_records([RecordInput(
            entity=entity_of(namespace), collection=self.collection, type=self.record_type, key=key,
            text=item_text(value, index if isinstance(index, list) else None), content={"value": dict(value)})])

    def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        head = self._head(entity_of(namespace), key)
        if head is None or head.tombstone:
            return None
        record = self.client.get_record(head.id)
        written = _when(record.created_at)
        return Item(value=self._value_of(record.type, record.content), key=key, namespace=namespace,
                    created_at=written, updated_at=written)

    def _delete(self, namespace: tuple[str, ...], key: str) -> None:
        entity = entity_of(namespace)
        if self.forget:
            newest = self._newest(entity, key)
            if newest is not None:
                try:
                    self.client.delete_record(newest.id)
                except NotFound:  # erased since the history was read: already gone
                    pass
            return
        head = self._head(entity, key)
        if head is not None and not head.tombstone:
            self.client.write_records([RecordInput(
                entity=entity, collection=self.collection, type=self.record_type, key=key, tombstone=True,
                derived_from=[head.id])])

    def _newest(self, entity: str, key: str) -> DocumentVersion | None:
        """The lane's newest version of any status (``DELETE`` of one erases the whole slot)."""
        try:
            return self.client.document_history(entity, self.collection, key, limit=1).versions[0]
        except (NotFound, IndexError):
            return None

    def _head(self, entity: str, key: str) -> DocumentVersion | None:
        """The newest active version of the lane, ready or not (a value still being enriched is
        already the one ``get`` returns: read your writes), or None."""
        try:
            return next((version for version in self.client.iter_document_history(entity, self.collection, key)
                         if version.status == "active"), None)
        except NotFound:
            return None

    # --- many items --------------------------------------------------------------------------

    def _search(self, op: SearchOp) -> list[SearchItem]:
        entities = None if not op.namespace_prefix else self._entities_under(op.namespace_prefix)
        if entities == []:
            return []
        found = (self._ranked(op.query, entities, op) if op.query else self._listed(entities, op))
        return found[op.offset:op.offset + op.limit]

    def _listed(self, entities: list[str] | None, op: SearchOp) -> list[SearchItem]:
        """The current facts of ``entities`` (None: every one), by entity then key, until
        ``offset + limit`` pass the filter."""
        wanted = op.offset + op.limit
        found: list[SearchItem] = []
        for entity in entities if entities is not None else self._entities():
            for entry in self.client.iter_memory_ls(self._fact_path(entity)):
                item = self._search_item(entity, entry.name, None, op.filter)
                if item is not None:
                    found.append(item)
                    if len(found) >= wanted:
                        return found
        return found

    def _ranked(self, query: str, entities: list[str] | None, op: SearchOp) -> list[SearchItem]:
        """The best current facts for ``query``: one ``/search`` per 100 entities (scores are
        not comparable across responses, so several are interleaved by rank), read in that
        order until ``offset + limit`` pass the filter."""
        scope: dict[str, Any] = {"collections": [self.collection], "keyed": True, "versions": "current"}
        k = SEARCH_PAGE if op.filter else min(SEARCH_PAGE, op.offset + op.limit)
        hits = []
        for index, chunk in enumerate(_chunks(entities, SEARCH_PAGE) if entities is not None else [None]):
            response = self.client.search(query, mode=self.mode, k=k, include=["entity", "key"],
                                          scope=scope if chunk is None else {**scope, "entities": chunk})
            hits += [(hit.rank, index, hit) for hit in response.hits
                     if hit.entity is not None and hit.key is not None and namespace_of(hit.entity)]
        found: list[SearchItem] = []
        for _, _, hit in sorted(hits, key=lambda ranked: ranked[:2]):
            item = self._search_item(str(hit.entity), str(hit.key), hit.score, op.filter)
            if item is not None:
                found.append(item)
                if len(found) >= op.offset + op.limit:
                    break
        return found

    def _search_item(self, entity: str, key: str, score: float | None,
                     conditions: dict[str, Any] | None) -> SearchItem | None:
        try:
            fact = self.client.memory_read(self._fact_path(entity, key))
        except NotFound:  # retracted or erased between the listing and this read
            return None
        value = self._value_of(fact.type, fact.content)
        if conditions and not value_matches(value, conditions):
            return None
        written = _when(fact.recorded_at)
        return SearchItem(namespace=namespace_of(entity), key=key, value=value, created_at=written,
                          updated_at=written, score=score)

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found: set[tuple[str, ...]] = set()
        for entity in self._entities():
            namespace = namespace_of(entity)
            if namespace and all(namespace_matches(namespace, condition) for condition in op.match_conditions or ()):
                found.add(namespace[:op.max_depth] if op.max_depth is not None else namespace)
        return sorted(found)[op.offset:op.offset + op.limit]

    # --- addresses ---------------------------------------------------------------------------

    def _entities(self) -> list[str]:
        """Every entity holding facts in the collection, by name."""
        return [entry.name for entry in self.client.iter_memory_ls(self._fact_path())]

    def _entities_under(self, prefix: tuple[str, ...]) -> list[str]:
        """The entities whose namespace starts with ``prefix``."""
        return [entity for entity in self._entities() if namespace_of(entity)[:len(prefix)] == prefix]

    def _fact_path(self, entity: str | None = None, key: str | None = None) -> str:
        segments = ["facts", self.collection, *(segment for segment in (entity, key) if segment is not None)]
        return "/".join(segments[:2] + [escape_segment(segment) for segment in segments[2:]])

    def _value_of(self, record_type: str, content: Any) -> dict[str, Any]:
        if record_type == self.record_type and isinstance(content, dict) and isinstance(content.get("value"), dict):
            return dict(content["value"])
        return dict(content) if isinstance(content, dict) else {"text": content}


def entity_of(namespace: tuple[str, ...]) -> str:
    """The entity a namespace names: its labels joined by ``.``."""
    return ".".join(namespace)


def namespace_of(entity: str) -> tuple[str, ...]:
    """The namespace of an entity; ``()`` when an empty label (``a..b``, ``.a``) leaves it
    without one."""
    labels = tuple(entity.split("."))
    return labels if all(labels) else ()


def escape_segment(value: str) -> str:
    """One segment of a memory path: ``%``, ``/`` and control characters as ``%XX``."""
    return "".join(_ESCAPED.get(character, character) for character in value)


def item_text(value: Mapping[str, Any], index: list[str] | None) -> str:
    """The text a value is searched by (module docstring)."""
    if index:
        parts = [text for path in index for text in get_text_at_path(value, path) if text]
        if parts:
            return "\n".join(parts)
    if isinstance(value.get("text"), str) and value["text"]:
        return str(value["text"])
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def value_matches(value: Mapping[str, Any], conditions: Mapping[str, Any]) -> bool:
    """LangGraph's filter: each key's value equals the condition, or passes each ``$op`` of a
    dict of operators; a missing key or incomparable values do not match."""
    for key, condition in conditions.items():
        if key not in value:
            return False
        if isinstance(condition, dict) and condition and all(name.startswith("$") for name in condition):
            for name, operand in condition.items():
                if name not in _COMPARE:
                    raise ValueError(f"unknown filter operator {name!r}; use one of {', '.join(_COMPARE)}")
                try:
                    if not _COMPARE[name](value[key], operand):
                        return False
                except TypeError:
                    return False
        elif value[key] != condition:
            return False
    return True


def namespace_matches(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    """A ``prefix`` or ``suffix`` condition, ``*`` matching any one label."""
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    labels = namespace[:len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path):]
    return all(wanted in ("*", label) for wanted, label in zip(path, labels))


def _chunks(items: list[str], size: int) -> list[list[str]]:
    return [items[start:start + size] for start in range(0, len(items), size)]


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text)
