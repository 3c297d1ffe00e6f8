"""Every route of the API as one method, shared by the sync and the async client.

A method only describes its request (``Call``); the client's ``_execute`` sends it, so
``MemseekClient.timeline(...)`` returns a ``TimelinePage`` and ``AsyncMemseekClient.timeline(...)``
an awaitable of one. Keyword arguments left ``None`` are not sent (the server's defaults apply);
Python names map to the API's spelling (``top_n`` → ``topN``).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any
from urllib.parse import quote

from . import models as m


@dataclass(frozen=True, slots=True)
class Call:
    """One request: ``result`` is the model its 2xx body decodes to (``None``: plain JSON)."""

    method: str
    path: str
    result: type | None
    params: Mapping[str, Any] | None = None
    body: Any = None


def _segment(value: str) -> str:
    return quote(str(value), safe="")


def _drop_none(**members: Any) -> dict[str, Any]:
    return {key: value for key, value in members.items() if value is not None}


def _when(value: date | datetime | str | None) -> str | None:
    return value.isoformat() if isinstance(value, (date, datetime)) else value


class Routes:
    """The route methods, mixed into ``MemseekClient`` and ``AsyncMemseekClient``, which each
    define ``_execute(call)``."""

    # --- service ---------------------------------------------------------------------------

    def health(self):
        """``GET /health`` (no key needed) → ``Health``. A 503 raises ``Unavailable``."""
        return self._execute(Call("GET", "/health", m.Health))

    def openapi(self):
        """``GET /api/schema/``: the server's OpenAPI document, as plain JSON."""
        return self._execute(Call("GET", "/api/schema/", None, params={"format": "json"}))

    # --- records ---------------------------------------------------------------------------

    def write_records(self, records: Sequence[m.RecordInput | Mapping[str, Any]]):
        """``POST /records``: one atomic batch (1–100 records) → ``IngestResult``."""
        return self._execute(Call("POST", "/records", m.IngestResult, body={"records": list(records)}))

    def get_record(self, record_id: str):
        """``GET /records/{id}`` → ``Record`` (``NotFound`` for another workspace's id too)."""
        return self._execute(Call("GET", f"/records/{_segment(record_id)}", m.Record))

    def approve_record(self, record_id: str):
        """``POST /records/{id}/approve``: write the active successor of a draft → ``ReviewResult``."""
        return self._execute(Call("POST", f"/records/{_segment(record_id)}/approve", m.ReviewResult))

    def reject_record(self, record_id: str):
        """``POST /records/{id}/reject``: withdraw a draft → ``ReviewResult``."""
        return self._execute(Call("POST", f"/records/{_segment(record_id)}/reject", m.ReviewResult))

    # --- reads -----------------------------------------------------------------------------

    def timeline(self, entity: str, *, collections: Sequence[str] | None = None, types: Sequence[str] | None = None,
                 status: str | None = None, limit: int | None = None, before_seq: int | None = None,
                 include_system: bool | None = None):
        """``GET /timeline``: one page of an entity's records, newest first → ``TimelinePage``."""
        return self._execute(Call("GET", "/timeline", m.TimelinePage, params=_drop_none(
            entity=entity, collections=collections, types=types, status=status, limit=limit, before_seq=before_seq,
            include_system=include_system)))

    def document(self, entity: str, *, collections: Sequence[str] | None = None, status: str | None = None):
        """``GET /document``: an entity's current named facts → ``Document``."""
        return self._execute(Call("GET", "/document", m.Document,
                                  params=_drop_none(entity=entity, collections=collections, status=status)))

    def document_history(self, entity: str, collection: str, key: str, *, limit: int | None = None,
                         before_seq: int | None = None):
        """``GET /document/history``: one page of a fact's versions → ``DocumentHistory``."""
        return self._execute(Call("GET", "/document/history", m.DocumentHistory, params=_drop_none(
            entity=entity, collection=collection, key=key, limit=limit, before_seq=before_seq)))

    def collections(self):
        """``GET /collections`` → ``CollectionList``."""
        return self._execute(Call("GET", "/collections", m.CollectionList))

    # --- search and views ------------------------------------------------------------------

    def search(self, q: str | None = None, *, mode: str | None = None, scope: Mapping[str, Any] | None = None,
               where: Mapping[str, Any] | None = None, order_by: Sequence[Any] | None = None, k: int | None = None,
               include: Sequence[str] | None = None, fields: Sequence[str] | None = None,
               annotations: Sequence[str] | None = None, render: bool | None = None, fence: Any = None,
               rank: Any = None, rerank: Any = None, graph_boost: Any = None, params: Mapping[str, Any] | None = None,
               sources: Sequence[Any] | None = None, fuse: Any = None, boost: Any = None):
        """``POST /search`` with a SearchSpec → ``SearchResponse``."""
        return self._execute(Call("POST", "/search", m.SearchResponse, body=_drop_none(
            q=q, mode=mode, scope=scope, where=where, order_by=order_by, k=k, include=include, fields=fields,
            annotations=annotations, render=render, fence=fence, rank=rank, rerank=rerank, graph_boost=graph_boost,
            params=params, sources=sources, fuse=fuse, boost=boost)))

    def search_get(self, q: str, *, entity: str | None = None, collection: str | None = None, k: int | None = None):
        """``GET /search``: the query-string form → ``SearchResponse``."""
        return self._execute(Call("GET", "/search", m.SearchResponse,
                                  params=_drop_none(q=q, entity=entity, collection=collection, k=k)))

    def views(self):
        """``GET /views``: every loaded view version and its input contract → ``ViewList``."""
        return self._execute(Call("GET", "/views", m.ViewList))

    def query_view(self, name: str, parameters: Mapping[str, Any] | None = None):
        """``POST /views/{name}/query`` with the view's parameters → ``ViewQueryResult``."""
        return self._execute(Call("POST", f"/views/{_segment(name)}/query", m.ViewQueryResult,
                                  body=dict(parameters or {})))

    def rank_schema(self):
        """``GET /rank/schema`` → ``RankSchema``."""
        return self._execute(Call("GET", "/rank/schema", m.RankSchema))

    def lexical_search(self, text: str, *, scope: Mapping[str, Any] | None = None, limit: int | None = None,
                       scan_limit: int | None = None, scan_bytes_limit: int | None = None, after: str | None = None,
                       type: str | None = None, tag: str | None = None):
        """``POST /search/lexical``: exact BM25 (``bm25_v1``) over one source-row scan →
        ``LexicalResponse``. ``after`` continues from a previous page's ``next_after``."""
        query = {"text": text, **_drop_none(limit=limit, scan_limit=scan_limit, scan_bytes_limit=scan_bytes_limit,
                                            type=type, tag=tag), "after": after}
        return self._execute(Call("POST", "/search/lexical", m.LexicalResponse, body={
            "contract_version": 1, "mode": "lexical", "scope": dict(scope or {}), "query": query}))

    # --- context and retrieval -------------------------------------------------------------

    def context(self, entity: str, task: str, budget: int, *, collections: Sequence[str] | None = None,
                fence_tag: str | None = None, fence_preamble: str | None = None):
        """``GET /context``: token-budgeted context for an entity and a task → ``ContextResponse``."""
        return self._execute(Call("GET", "/context", m.ContextResponse, params=_drop_none(
            entity=entity, task=task, budget=budget, collections=collections, fence_tag=fence_tag,
            fence_preamble=fence_preamble)))

    def retrieve(self, query: str, *, entity: str | None = None, entities: Sequence[str] | None = None,
                 collections: Sequence[str] | None = None, types: Sequence[str] | None = None,
                 tags: Mapping[str, Any] | None = None, agent_id: str | None = None, top_n: int | None = None,
                 token_budget: int | None = None, mode: str | None = None, rerank: bool | None = None,
                 raw: bool | None = None, include_superseded: bool | None = None,
                 exclude_superseded: bool | None = None, as_of: datetime | str | None = None,
                 as_of_axis: str | None = None, explain: bool | None = None):
        """``POST /retrieve``: one token-budgeted ``MemoryContext`` with a ``receipt_id``."""
        return self._execute(Call("POST", "/retrieve", m.MemoryContext, body=_drop_none(
            query=query, entity=entity, entities=entities, collections=collections, types=types, tags=tags,
            agentId=agent_id, topN=top_n, tokenBudget=token_budget, mode=mode, rerank=rerank, raw=raw,
            includeSuperseded=include_superseded, excludeSuperseded=exclude_superseded, asOf=_when(as_of),
            asOfAxis=as_of_axis, explain=explain)))

    def receipt(self, receipt_id: str):
        """``GET /receipts/{id}``: what one retrieval delivered → ``Receipt``."""
        return self._execute(Call("GET", f"/receipts/{_segment(receipt_id)}", m.Receipt))

    def send_feedback(self, receipt_id: str, outcome: str, *, score: float | None = None,
                      record_ids: Sequence[str] | None = None, comment: str | None = None,
                      dedupe_key: str | None = None):
        """``POST /receipts/{id}/feedback``: an outcome for delivered records → ``Feedback``
        (``deduplicated`` is true when ``dedupe_key`` repeated an earlier identical report)."""
        return self._execute(Call("POST", f"/receipts/{_segment(receipt_id)}/feedback", m.Feedback, body=_drop_none(
            outcome=outcome, score=score, recordIds=record_ids, comment=comment, dedupeKey=dedupe_key)))

    def evaluate(self, queries: Sequence[Mapping[str, Any]], *, k: int | None = None, target: Any = None):
        """``POST /evaluate``: recall@k, nDCG@k and MRR for graded queries → ``Evaluation``."""
        return self._execute(Call("POST", "/evaluate", m.Evaluation,
                                  body=_drop_none(queries=list(queries), k=k, target=target)))

    # --- the memory brief and lookups ------------------------------------------------------

    def memory_search(self, query: str, *, entity: str | None = None, scope: str | None = None,
                      before: date | datetime | str | None = None, after: date | datetime | str | None = None):
        """``POST /memory/search``: the brief (no ``scope``, no ``after``) or the ranked list → ``Brief``."""
        return self._execute(Call("POST", "/memory/search", m.Brief, body=_drop_none(
            query=query, entity=entity, scope=scope, before=_when(before), after=_when(after))))

    def memory_grep(self, q: str, *, path: str | None = None, entity: str | None = None,
                    before: date | datetime | str | None = None, after: date | datetime | str | None = None,
                    limit: int | None = None, cursor: str | None = None):
        """``GET /memory/grep``: passages containing an exact phrase, id or error code (case
        ignored), newest first → ``MemoryGrep``; ``cursor`` continues from ``next_cursor``."""
        return self._execute(Call("GET", "/memory/grep", m.MemoryGrep, params=_drop_none(
            q=q, path=path, entity=entity, before=_when(before), after=_when(after), limit=limit, cursor=cursor)))

    def memory_latest(self, *, path: str | None = None, entity: str | None = None,
                      before: date | datetime | str | None = None, after: date | datetime | str | None = None,
                      limit: int | None = None, cursor: str | None = None):
        """``GET /memory/latest``: the newest passages under a path, or those between two dates
        → ``MemoryLatest``."""
        return self._execute(Call("GET", "/memory/latest", m.MemoryLatest, params=_drop_none(
            path=path, entity=entity, before=_when(before), after=_when(after), limit=limit, cursor=cursor)))

    def memory_around(self, path: str, *, before: int | None = None, after: int | None = None):
        """``GET /memory/around``: the passages either side of one, in the same conversation →
        ``MemoryAround``."""
        return self._execute(Call("GET", "/memory/around", m.MemoryAround,
                                  params=_drop_none(path=path, before=before, after=after)))

    def memory_read(self, path: str):
        """``GET /memory/read``: one passage or fact, whole, by path → ``MemoryRead``."""
        return self._execute(Call("GET", "/memory/read", m.MemoryRead, params={"path": path}))

    def memory_ls(self, path: str | None = None, *, limit: int | None = None, cursor: str | None = None):
        """``GET /memory/ls``: what exists under a path, with counts → ``MemoryLs``."""
        return self._execute(Call("GET", "/memory/ls", m.MemoryLs,
                                  params=_drop_none(path=path, limit=limit, cursor=cursor)))

    def memory_history(self, path: str, *, limit: int | None = None, cursor: str | None = None):
        """``GET /memory/history``: every value of one fact (``facts/<collection>/<entity>/<key>``),
        oldest first → ``MemoryHistory``."""
        return self._execute(Call("GET", "/memory/history", m.MemoryHistory,
                                  params=_drop_none(path=path, limit=limit, cursor=cursor)))
