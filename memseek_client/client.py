"""``MemseekClient``: the synchronous client."""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any, TypeVar

import httpx

from ._core import ClientCore, closed_failure, export_params, finish, line_cursor, transport_failure
from .models import DocumentVersion, LexicalResponse, MemoryHit, MemoryLsEntry, MemoryVersion, TimelineRow
from .routes import Call, SyncRoutes

T = TypeVar("T")


class MemseekClient(ClientCore, SyncRoutes):
    """Synchronous client on ``httpx.Client``; use it as a context manager or call ``close()``.

    >>> with MemseekClient("http://127.0.0.1:8000", KEY) as memseek:
    ...     page = memseek.timeline("contact.maria")
    """

    def __init__(self, base_url: str, api_key: str | None = None, *, transport: httpx.BaseTransport | None = None,
                 sleep: Callable[[float], None] = time.sleep, **options: Any) -> None:
        super().__init__(base_url, api_key, **options)
        self._sleep = sleep
        self._http = httpx.Client(base_url=self.base_url, headers=self._headers, timeout=self._timeout,
                                  transport=transport)

    def close(self) -> None:
        """Release the connections; a later call raises ``ClientClosed``."""
        self._http.close()

    def __enter__(self) -> MemseekClient:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def _execute(self, call: Call[T]) -> T:
        if self._http.is_closed:
            raise closed_failure(call)
        args = self._request_args(call)
        attempt = 0
        while True:
            attempt += 1
            try:
                response = self._http.request(**args)
            except httpx.TransportError as error:
                delay = self._retry_delay_after_error(error, call.method, attempt)
                if delay is None:
                    raise transport_failure(error, call) from error
            else:
                self._remember_position(response)
                delay = self._retry_delay_after_response(response, attempt)
                if delay is None:
                    return finish(call, response)
            self._sleep(delay)

    # --- iterators: each follows the route's own cursor until the server says there is no more

    def iter_export(self, *, entity: str | None = None, cursor: str | None = None) -> Iterator[str]:
        """The lines of ``GET /export`` (each ending in a newline), streamed. A connection that
        breaks mid-way is resumed from the last line's cursor, as the retry policy allows; an
        error status raises its ``MemseekError``. ``cursor`` starts after that line."""
        call: Call[Any] = Call("GET", "/export", None)
        attempt = since_cursor = 0
        while True:
            if self._http.is_closed:
                raise closed_failure(call)
            attempt += 1
            try:
                with self._http.stream("GET", "/export", params=export_params(entity, cursor),
                                       headers=self._request_args(call).get("headers")) as response:
                    if response.status_code >= 400:
                        response.read()
                        finish(call, response)
                    # Lines given before any cursor (the header) come again on a fresh start.
                    skip, since_cursor = since_cursor, 0
                    for line in response.iter_lines():
                        if skip:
                            skip -= 1
                            continue
                        yield line + "\n"
                        held = line_cursor(line)
                        cursor, since_cursor = (held, 0) if held is not None else (cursor, since_cursor + 1)
                        attempt = 0
                return
            except httpx.TransportError as error:
                delay = self._retry_delay_after_error(error, "GET", attempt)
                if delay is None:
                    raise transport_failure(error, call) from error
            self._sleep(delay)

    def _walk(self, fetch: Callable[..., Any], items: str, next_member: str, cursor_param: str,
              args: tuple[Any, ...], options: dict[str, Any]) -> Iterator[Any]:
        while True:
            page = fetch(*args, **options)
            yield from getattr(page, items)
            cursor = getattr(page, next_member)
            if cursor is None:
                return
            options = {**options, cursor_param: cursor}

    def iter_timeline(self, entity: str, **filters: Any) -> Iterator[TimelineRow]:
        """Every record of ``timeline(entity, **filters)``, newest first (``before_seq``
        follows ``next_before_seq``)."""
        return self._walk(self.timeline, "records", "next_before_seq", "before_seq", (entity,), filters)

    def iter_document_history(self, entity: str, collection: str, key: str,
                              **options: Any) -> Iterator[DocumentVersion]:
        """Every version of one fact."""
        return self._walk(self.document_history, "versions", "next_before_seq", "before_seq",
                          (entity, collection, key), options)

    def iter_memory_grep(self, q: str, **options: Any) -> Iterator[MemoryHit]:
        """Every passage ``memory_grep(q, **options)`` finds, newest first."""
        return self._walk(self.memory_grep, "hits", "next_cursor", "cursor", (q,), options)

    def iter_memory_latest(self, **options: Any) -> Iterator[MemoryHit]:
        """Every passage ``memory_latest(**options)`` lists, newest first."""
        return self._walk(self.memory_latest, "hits", "next_cursor", "cursor", (), options)

    def iter_memory_ls(self, path: str | None = None, **options: Any) -> Iterator[MemoryLsEntry]:
        """Every entry under ``path``."""
        return self._walk(self.memory_ls, "entries", "next_cursor", "cursor", (path,), options)

    def iter_memory_history(self, path: str, **options: Any) -> Iterator[MemoryVersion]:
        """Every version of one fact, oldest first."""
        return self._walk(self.memory_history, "versions", "next_cursor", "cursor", (path,), options)

    def iter_lexical_pages(self, text: str, **query: Any) -> Iterator[LexicalResponse]:
        """Each page of a lexical scan, following ``next_after`` until the scope is scanned.
        Scores rank hits within their page only (the spec: do not merge them across pages)."""
        while True:
            response = self.lexical_search(text, **query)
            yield response
            if response.page.next_after is None:
                return
            query = {**query, "after": response.page.next_after}
