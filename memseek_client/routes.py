"""Every route of the API as one method, shared by the sync and the async client.

A route is written once as a function that only describes its request (a ``Call[T]``, ``T``
the model its 2xx body decodes to) and wrapped in ``route``; the client's ``_execute`` sends
it. Read on a ``SyncRoutes`` (``MemseekClient``) a route is a method returning ``T``; read on
an ``AsyncRoutes`` (``AsyncMemseekClient``) one returning ``Awaitable[T]``: type checkers see
both from the one definition. Keyword arguments left ``None`` are not sent (the server's
defaults apply); Python names map to the API's spelling (``top_n`` → ``topN``).
"""
from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload
from urllib.parse import quote

from . import models as m

T = TypeVar("T")
P = ParamSpec("P")
JsonObject = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One request: ``result`` is the model its 2xx body decodes to (``None``: plain JSON)."""

    method: str
    path: str
    result: type[T] | None
    params: Mapping[str, Any] | None = None
    body: Any = None
    # Sent as it is instead of a JSON ``body``: an export's JSON Lines for ``POST /import``.
    ndjson: bytes | None = None


class route(Generic[P, T]):  # lower case: used as a decorator, like property
    """A route method: ``build`` makes its ``Call``; the client it is read on sends it."""

    def __init__(self, build: Callable[Concatenate[Any, P], Call[T]]) -> None:
        self._build = build
        self.__doc__, self.__name__ = build.__doc__, build.__name__

    @overload
    def __get__(self, instance: None, owner: type[Any]) -> route[P, T]: ...

    @overload
    def __get__(self, instance: SyncRoutes, owner: type[Any]) -> Callable[P, T]: ...

    @overload
    def __get__(self, instance: AsyncRoutes, owner: type[Any]) -> Callable[P, Awaitable[T]]: ...

    def __get__(self, instance: Any, owner: type[Any]) -> Any:
        if instance is None:
            return self
        build = self._build

        @functools.wraps(build)
        def method(*args: P.args, **kwargs: P.kwargs) -> Any:
            return instance._execute(build(instance, *args, **kwargs))
        return method


def _segment(value: str) -> str:
    return quote(str(value), safe="")


def _drop_none(**members: Any) -> dict[str, Any]:
    return {key: value for key, value in members.items() if value is not None}


def _when(value: date | datetime | str | None) -> str | None:
    return value.isoformat() if isinstance(value, (date, datetime)) else value


class Routes:
    """The route methods, read through ``SyncRoutes`` (``MemseekClient``) or ``AsyncRoutes``
    (``AsyncMemseekClient``), which each define ``_execute(call)``."""

    # --- service ---------------------------------------------------------------------------

    @route
    def health(self) -> Call[m.Health]:
        """``GET /health`` (no key needed) → ``Health``. A 503 raises ``Unavailable``."""
        return Call("GET", "/health", m.Health)

    @route
    def openapi(self) -> Call[JsonObject]:
        """``GET /api/schema/``: the server's OpenAPI document, as plain JSON."""
        return Call("GET", "/api/schema/", None, params={"format": "json"})

    # --- records ---------------------------------------------------------------------------

    @route
    def write_records(self, records: Sequence[m.RecordInput | Mapping[str, Any]]) -> Call[m.IngestResult]:
        """``POST /records``: one atomic batch (1–100 records) → ``IngestResult``."""
        return Call("POST", "/records", m.IngestResult, body={"records": list(records)})

    @route
    def get_record(self, record_id: str) -> Call[m.Record]:
        """``GET /records/{id}`` → ``Record`` (``NotFound`` for another workspace's id too)."""
        return Call("GET", f"/records/{_segment(record_id)}", m.Record)

    @route
    def delete_record(self, record_id: str, dry_run: bool = False) -> Call[m.ErasureResult]:
        """``DELETE /records/{id}``: forget the record for good, with every version, draft and
        derived record of it → ``ErasureResult`` (``dry_run``: count only; ``NotFound`` for an
        unknown id)."""
        return Call("DELETE", f"/records/{_segment(record_id)}", m.ErasureResult,
                    params={"dry_run": "true"} if dry_run else None)

    @route
    def erase_entity(self, entity: str, *, collection: str | None = None,
                     dry_run: bool = False) -> Call[m.ErasureResult]:
        """``POST /erase``: forget every record of ``entity`` (in ``collection`` only, when given)
        for good → ``ErasureResult`` (``dry_run``: count only)."""
        return Call("POST", "/erase", m.ErasureResult,
                    body=_drop_none(entity=entity, collection=collection, dry_run=dry_run))

    @route
    def approve_record(self, record_id: str) -> Call[m.ReviewResult]:
        """``POST /records/{id}/approve``: write the active successor of a draft → ``ReviewResult``."""
        return Call("POST", f"/records/{_segment(record_id)}/approve", m.ReviewResult)

    @route
    def reject_record(self, record_id: str) -> Call[m.ReviewResult]:
        """``POST /records/{id}/reject``: withdraw a draft → ``ReviewResult``."""
        return Call("POST", f"/records/{_segment(record_id)}/reject", m.ReviewResult)

    # --- reads -----------------------------------------------------------------------------

    @route
    def timeline(self, entity: str, *, collections: Sequence[str] | None = None, types: Sequence[str] | None = None,
                 status: str | None = None, limit: int | None = None, before_seq: int | None = None,
                 include_system: bool | None = None) -> Call[m.TimelinePage]:
        """``GET /timeline``: one page of an entity's records, newest first → ``TimelinePage``."""
        return Call("GET", "/timeline", m.TimelinePage, params=_drop_none(
            entity=entity, collections=collections, types=types, status=status, limit=limit, before_seq=before_seq,
            include_system=include_system))

    @route
    def document(self, entity: str, *, collections: Sequence[str] | None = None,
                 status: str | None = None) -> Call[m.Document]:
        """``GET /document``: an entity's current named facts → ``Document``."""
        return Call("GET", "/document", m.Document,
                                  params=_drop_none(entity=entity, collections=collections, status=status))

    @route
    def document_history(self, entity: str, collection: str, key: str, *, limit: int | None = None,
                         before_seq: int | None = None) -> Call[m.DocumentHistory]:
        """``GET /document/history``: one page of a fact's versions → ``DocumentHistory``."""
        return Call("GET", "/document/history", m.DocumentHistory, params=_drop_none(
            entity=entity, collection=collection, key=key, limit=limit, before_seq=before_seq))

    @route
    def collections(self) -> Call[m.CollectionList]:
        """``GET /collections`` → ``CollectionList``."""
        return Call("GET", "/collections", m.CollectionList)

    # --- search and views ------------------------------------------------------------------

    @route
    def search(self, q: str | None = None, *, mode: str | None = None, scope: Mapping[str, Any] | None = None,
               where: Mapping[str, Any] | None = None, order_by: Sequence[Any] | None = None, k: int | None = None,
               include: Sequence[str] | None = None, fields: Sequence[str] | None = None,
               annotations: Sequence[str] | None = None, render: bool | None = None, fence: Any = None,
               rank: Any = None, rerank: Any = None, graph_boost: Any = None, params: Mapping[str, Any] | None = None,
               sources: Sequence[Any] | None = None, fuse: Any = None, boost: Any = None) -> Call[m.SearchResponse]:
        """``POST /search`` with a SearchSpec → ``SearchResponse``."""
        return Call("POST", "/search", m.SearchResponse, body=_drop_none(
            q=q, mode=mode, scope=scope, where=where, order_by=order_by, k=k, include=include, fields=fields,
            annotations=annotations, render=render, fence=fence, rank=rank, rerank=rerank, graph_boost=graph_boost,
            params=params, sources=sources, fuse=fuse, boost=boost))

    @route
    def search_get(self, q: str, *, entity: str | None = None, collection: str | None = None,
                   k: int | None = None) -> Call[m.SearchResponse]:
        """``GET /search``: the query-string form → ``SearchResponse``."""
        return Call("GET", "/search", m.SearchResponse,
                                  params=_drop_none(q=q, entity=entity, collection=collection, k=k))

    @route
    def views(self) -> Call[m.ViewList]:
        """``GET /views``: every loaded view version and its input contract → ``ViewList``."""
        return Call("GET", "/views", m.ViewList)

    @route
    def query_view(self, name: str, parameters: Mapping[str, Any] | None = None) -> Call[m.ViewQueryResult]:
        """``POST /views/{name}/query`` with the view's parameters → ``ViewQueryResult``."""
        return Call("POST", f"/views/{_segment(name)}/query", m.ViewQueryResult,
                                  body=dict(parameters or {}))

    @route
    def rank_schema(self) -> Call[m.RankSchema]:
        """``GET /rank/schema`` → ``RankSchema``."""
        return Call("GET", "/rank/schema", m.RankSchema)

    @route
    def lexical_search(self, text: str, *, scope: Mapping[str, Any] | None = None, limit: int | None = None,
                       scan_limit: int | None = None, scan_bytes_limit: int | None = None, after: str | None = None,
                       type: str | None = None, tag: str | None = None) -> Call[m.LexicalResponse]:
        """``POST /search/lexical``: exact BM25 (``bm25_v1``) over one source-row scan →
        ``LexicalResponse``. ``after`` continues from a previous page's ``next_after``."""
        query = {"text": text, **_drop_none(limit=limit, scan_limit=scan_limit, scan_bytes_limit=scan_bytes_limit,
                                            type=type, tag=tag), "after": after}
        return Call("POST", "/search/lexical", m.LexicalResponse, body={
            "contract_version": 1, "mode": "lexical", "scope": dict(scope or {}), "query": query})

    # --- context and retrieval -------------------------------------------------------------

    @route
    def context(self, entity: str, task: str, budget: int, *, collections: Sequence[str] | None = None,
                fence_tag: str | None = None, fence_preamble: str | None = None) -> Call[m.ContextResponse]:
        """``GET /context``: token-budgeted context for an entity and a task → ``ContextResponse``."""
        return Call("GET", "/context", m.ContextResponse, params=_drop_none(
            entity=entity, task=task, budget=budget, collections=collections, fence_tag=fence_tag,
            fence_preamble=fence_preamble))

    @route
    def retrieve(self, query: str, *, entity: str | None = None, entities: Sequence[str] | None = None,
                 collections: Sequence[str] | None = None, types: Sequence[str] | None = None,
                 tags: Mapping[str, Any] | None = None, agent_id: str | None = None, top_n: int | None = None,
                 token_budget: int | None = None, mode: str | None = None, rerank: bool | None = None,
                 raw: bool | None = None, include_superseded: bool | None = None,
                 exclude_superseded: bool | None = None, as_of: datetime | str | None = None,
                 as_of_axis: str | None = None, explain: bool | None = None) -> Call[m.MemoryContext]:
        """``POST /retrieve``: one token-budgeted ``MemoryContext`` with a ``receipt_id``."""
        return Call("POST", "/retrieve", m.MemoryContext, body=_drop_none(
            query=query, entity=entity, entities=entities, collections=collections, types=types, tags=tags,
            agentId=agent_id, topN=top_n, tokenBudget=token_budget, mode=mode, rerank=rerank, raw=raw,
            includeSuperseded=include_superseded, excludeSuperseded=exclude_superseded, asOf=_when(as_of),
            asOfAxis=as_of_axis, explain=explain))

    @route
    def receipt(self, receipt_id: str) -> Call[m.Receipt]:
        """``GET /receipts/{id}``: what one retrieval delivered → ``Receipt``."""
        return Call("GET", f"/receipts/{_segment(receipt_id)}", m.Receipt)

    @route
    def send_feedback(self, receipt_id: str, outcome: str, *, score: float | None = None,
                      record_ids: Sequence[str] | None = None, comment: str | None = None,
                      dedupe_key: str | None = None) -> Call[m.Feedback]:
        """``POST /receipts/{id}/feedback``: an outcome for delivered records → ``Feedback``
        (``deduplicated`` is true when ``dedupe_key`` repeated an earlier identical report)."""
        return Call("POST", f"/receipts/{_segment(receipt_id)}/feedback", m.Feedback, body=_drop_none(
            outcome=outcome, score=score, recordIds=record_ids, comment=comment, dedupeKey=dedupe_key))

    @route
    def evaluate(self, queries: Sequence[Mapping[str, Any]], *, k: int | None = None,
                 target: Any = None) -> Call[m.Evaluation]:
        """``POST /evaluate``: recall@k, nDCG@k and MRR for graded queries → ``Evaluation``."""
        return Call("POST", "/evaluate", m.Evaluation,
                                  body=_drop_none(queries=list(queries), k=k, target=target))

    # --- export and import -----------------------------------------------------------------

    @route
    def import_export(self, export: bytes | str, *, ids: str | None = None,
                      seqs: str | None = None) -> Call[m.ImportResult]:
        """``POST /import``: an export (``iter_export``'s lines joined) into this key's workspace,
        all or nothing → ``ImportResult``. ``ids``: ``preserve`` (default) or ``remap``; ``seqs``:
        ``preserve`` (default) or ``renumber``."""
        return Call("POST", "/import", m.ImportResult, params=_drop_none(ids=ids, seqs=seqs),
                    ndjson=export.encode("utf-8") if isinstance(export, str) else export)

    # --- MCP ---------------------------------------------------------------------------------

    @route
    def tools(self) -> Call[m.ToolList]:
        """``GET /tools``: the active MCP declaration's tools, with their routes and schemas →
        ``ToolList``."""
        return Call("GET", "/tools", m.ToolList)

    # --- the memory brief and lookups ------------------------------------------------------

    @route
    def memory_search(self, query: str, *, entity: str | None = None, scope: str | None = None,
                      before: date | datetime | str | None = None,
                      after: date | datetime | str | None = None) -> Call[m.Brief]:
        """``POST /memory/search``: the brief (no ``scope``, no ``after``) or the ranked list → ``Brief``."""
        return Call("POST", "/memory/search", m.Brief, body=_drop_none(
            query=query, entity=entity, scope=scope, before=_when(before), after=_when(after)))

    @route
    def memory_grep(self, q: str, *, path: str | None = None, entity: str | None = None,
                    before: date | datetime | str | None = None, after: date | datetime | str | None = None,
                    limit: int | None = None, cursor: str | None = None) -> Call[m.MemoryGrep]:
        """``GET /memory/grep``: passages containing an exact phrase, id or error code (case
        ignored), newest first → ``MemoryGrep``; ``cursor`` continues from ``next_cursor``."""
        return Call("GET", "/memory/grep", m.MemoryGrep, params=_drop_none(
            q=q, path=path, entity=entity, before=_when(before), after=_when(after), limit=limit, cursor=cursor))

    @route
    def memory_latest(self, *, path: str | None = None, entity: str | None = None,
                      before: date | datetime | str | None = None, after: date | datetime | str | None = None,
                      limit: int | None = None, cursor: str | None = None) -> Call[m.MemoryLatest]:
        """``GET /memory/latest``: the newest passages under a path, or those between two dates
        → ``MemoryLatest``."""
        return Call("GET", "/memory/latest", m.MemoryLatest, params=_drop_none(
            path=path, entity=entity, before=_when(before), after=_when(after), limit=limit, cursor=cursor))

    @route
    def memory_around(self, path: str, *, before: int | None = None, after: int | None = None) -> Call[m.MemoryAround]:
        """``GET /memory/around``: the passages either side of one, in the same conversation →
        ``MemoryAround``."""
        return Call("GET", "/memory/around", m.MemoryAround,
                                  params=_drop_none(path=path, before=before, after=after))

    @route
    def memory_read(self, path: str) -> Call[m.MemoryRead]:
        """``GET /memory/read``: one passage or fact, whole, by path → ``MemoryRead``."""
        return Call("GET", "/memory/read", m.MemoryRead, params={"path": path})

    @route
    def memory_ls(self, path: str | None = None, *, limit: int | None = None,
                  cursor: str | None = None) -> Call[m.MemoryLs]:
        """``GET /memory/ls``: what exists under a path, with counts → ``MemoryLs``."""
        return Call("GET", "/memory/ls", m.MemoryLs,
                                  params=_drop_none(path=path, limit=limit, cursor=cursor))

    @route
    def memory_history(self, path: str, *, limit: int | None = None,
                       cursor: str | None = None) -> Call[m.MemoryHistory]:
        """``GET /memory/history``: every value of one fact (``facts/<collection>/<entity>/<key>``),
        oldest first → ``MemoryHistory``."""
        return Call("GET", "/memory/history", m.MemoryHistory,
                                  params=_drop_none(path=path, limit=limit, cursor=cursor))


class SyncRoutes(Routes, ABC):
    """A client whose ``_execute`` answers a ``Call[T]`` with ``T`` (``MemseekClient``)."""

    @abstractmethod
    def _execute(self, call: Call[T]) -> T: ...


class AsyncRoutes(Routes, ABC):
    """A client whose ``_execute`` answers a ``Call[T]`` with an awaitable of ``T``
    (``AsyncMemseekClient``)."""

    @abstractmethod
    async def _execute(self, call: Call[T]) -> T: ...
