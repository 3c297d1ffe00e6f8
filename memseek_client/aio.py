"""``AsyncMemseekClient``: the asyncio client; the same methods, each returning an awaitable."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx

from ._core import ClientCore, finish, transport_failure
from .models import DocumentVersion, LexicalResponse, MemoryHit, MemoryLsEntry, MemoryVersion, TimelineRow
from .routes import Call, Routes


class AsyncMemseekClient(ClientCore, Routes):
    """Asynchronous client on ``httpx.AsyncClient``; ``async with`` it or ``await aclose()``."""

    def __init__(self, base_url: str, api_key: str | None = None, *,
                 transport: httpx.AsyncBaseTransport | None = None,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep, **options):
        super().__init__(base_url, api_key, **options)
        self._sleep = sleep
        self._http = httpx.AsyncClient(base_url=self.base_url, headers=self._headers, timeout=self._timeout,
                                       transport=transport)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncMemseekClient:
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.aclose()

    async def _execute(self, call: Call):
        args = self._request_args(call)
        attempt = 0
        while True:
            attempt += 1
            try:
                response = await self._http.request(**args)
            except httpx.TransportError as error:
                delay = self._retry_delay_after_error(error, call.method, attempt)
                if delay is None:
                    raise transport_failure(error, call) from error
            else:
                self._remember_position(response)
                delay = self._retry_delay_after_response(response, attempt)
                if delay is None:
                    return finish(call, response)
            await self._sleep(delay)

    # --- iterators: each follows the route's own cursor until the server says there is no more

    async def _walk(self, fetch, items: str, next_member: str, cursor_param: str, args: tuple,
                    options: dict) -> AsyncIterator:
        while True:
            page = await fetch(*args, **options)
            for item in getattr(page, items):
                yield item
            cursor = getattr(page, next_member)
            if cursor is None:
                return
            options = {**options, cursor_param: cursor}

    def iter_timeline(self, entity: str, **filters) -> AsyncIterator[TimelineRow]:
        """Every record of ``timeline(entity, **filters)``, newest first."""
        return self._walk(self.timeline, "records", "next_before_seq", "before_seq", (entity,), filters)

    def iter_document_history(self, entity: str, collection: str, key: str,
                              **options) -> AsyncIterator[DocumentVersion]:
        """Every version of one fact."""
        return self._walk(self.document_history, "versions", "next_before_seq", "before_seq",
                          (entity, collection, key), options)

    def iter_memory_grep(self, q: str, **options) -> AsyncIterator[MemoryHit]:
        """Every passage ``memory_grep(q, **options)`` finds, newest first."""
        return self._walk(self.memory_grep, "hits", "next_cursor", "cursor", (q,), options)

    def iter_memory_latest(self, **options) -> AsyncIterator[MemoryHit]:
        """Every passage ``memory_latest(**options)`` lists, newest first."""
        return self._walk(self.memory_latest, "hits", "next_cursor", "cursor", (), options)

    def iter_memory_ls(self, path: str | None = None, **options) -> AsyncIterator[MemoryLsEntry]:
        """Every entry under ``path``."""
        return self._walk(self.memory_ls, "entries", "next_cursor", "cursor", (path,), options)

    def iter_memory_history(self, path: str, **options) -> AsyncIterator[MemoryVersion]:
        """Every version of one fact, oldest first."""
        return self._walk(self.memory_history, "versions", "next_cursor", "cursor", (path,), options)

    async def iter_lexical_pages(self, text: str, **query) -> AsyncIterator[LexicalResponse]:
        """Each page of a lexical scan, following ``next_after`` until the scope is scanned."""
        while True:
            response = await self.lexical_search(text, **query)
            yield response
            if response.page.next_after is None:
                return
            query = {**query, "after": response.page.next_after}
