"""LangChain retrievers over Memseek: ``MemseekRetriever`` runs ``POST /search`` and
``MemseekBriefRetriever`` the memory brief's search (``POST /memory/search``). Each returns
LangChain ``Document``s whose ``page_content`` is the record's text and whose ``metadata``
carries its address (``id``, and the brief's ``path``), so a chain can cite or look it up.

Both are ``langchain_core.retrievers.BaseRetriever``s: ``invoke``/``ainvoke``/``batch`` and
callbacks work as for any retriever. ``ainvoke`` awaits ``async_client`` (an
``AsyncMemseekClient``) when one is given, and otherwise runs ``client`` in a worker thread, as
``BaseRetriever`` does by default. A ``MemseekError`` from the server propagates.
"""
from __future__ import annotations

from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from .. import AsyncMemseekClient, MemseekClient
from ..models import Brief, SearchResponse

# What a search hit brings back besides its id, rank and score: everything a Document shows.
SEARCH_INCLUDE = ("text", "entity", "collection", "key", "type", "occurred_at")


class MemseekRetriever(BaseRetriever):
    """``POST /search`` for the query: the ``k`` best records of ``entities`` in ``collections``
    (None: every one the workspace's default scope allows), in ``mode`` (``hybrid``, ``vector``
    or ``text``). ``scope`` adds any other scope member (``types``, ``keyed``, ``depth_lte``...).
    ``metadata``: ``id``, ``score``, ``rank``, ``entity``, ``collection``, ``key``, ``type``,
    ``occurred_at``."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: MemseekClient
    entities: list[str] | None = None
    collections: list[str] | None = None
    scope: dict[str, Any] = Field(default_factory=dict)
    mode: str = "hybrid"
    k: int = 4

    async_client: AsyncMemseekClient | None = None

    def _search_args(self) -> dict[str, Any]:
        scope = dict(self.scope)
        if self.entities is not None:
            scope["entities"] = self.entities
        if self.collections is not None:
            scope["collections"] = self.collections
        return {"mode": self.mode, "k": self.k, "scope": scope, "include": list(SEARCH_INCLUDE)}

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return _search_documents(self.client.search(query, **self._search_args()))

    async def _aget_relevant_documents(self, query: str, *,
                                       run_manager: AsyncCallbackManagerForRetrieverRun) -> list[Document]:
        if self.async_client is None:
            return await super()._aget_relevant_documents(query, run_manager=run_manager)
        return _search_documents(await self.async_client.search(query, **self._search_args()))


def _search_documents(response: SearchResponse) -> list[Document]:
    return [Document(page_content=hit.text or "", id=hit.id, metadata={
        "id": hit.id, "score": hit.score, "rank": hit.rank, "entity": hit.entity, "collection": hit.collection,
        "key": hit.key, "type": hit.type, "occurred_at": hit.occurred_at}) for hit in response.hits]


class MemseekBriefRetriever(BaseRetriever):
    """The memory brief's search for the query, as of today, over ``entity``'s memory (None:
    the whole workspace); its ranked passages become the documents (at most 1,400 characters of
    text each, as the brief gives them). ``scope`` (a path prefix such as ``passages/main``)
    asks for the ranked list instead of the brief. ``metadata``: ``id``, ``path``, ``roles``,
    ``occurred_at``, ``truncated``."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: MemseekClient
    entity: str | None = None
    scope: str | None = None

    async_client: AsyncMemseekClient | None = None

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return _brief_documents(self.client.memory_search(query, entity=self.entity, scope=self.scope))

    async def _aget_relevant_documents(self, query: str, *,
                                       run_manager: AsyncCallbackManagerForRetrieverRun) -> list[Document]:
        if self.async_client is None:
            return await super()._aget_relevant_documents(query, run_manager=run_manager)
        return _brief_documents(await self.async_client.memory_search(query, entity=self.entity, scope=self.scope))


def _brief_documents(brief: Brief) -> list[Document]:
    return [Document(page_content=hit.text, id=hit.id, metadata={
        "id": hit.id, "path": hit.path, "roles": list(hit.roles), "occurred_at": hit.occurred_at,
        "truncated": hit.truncated}) for hit in brief.hits]
