"""The MCP server's async code run on the thread that serves the request, with the blocking
work it asks for (a Django view) run on that same thread while the loop is paused.

The SDK is async; Django's views and ORM are not, refuse to run while an event loop runs on
their thread, and a request's database connection belongs to its thread. ``run_here`` drives a
coroutine on this thread's own event loop (kept for the thread's life) in steps: the loop runs
until the coroutine is done or has asked ``RequestThread.call`` for a blocking call; the call
then runs with no loop running, its result goes back to the coroutine, and the loop resumes.
No second thread takes part, so a request never waits for another thread to be scheduled.
"""
from __future__ import annotations

import asyncio
import threading
from collections import deque

_local = threading.local()


class RequestThread:
    """What a coroutine under ``run_here`` uses to run blocking callables on the request's thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self._loop = loop
        self._pending: deque = deque()
        self.asked = asyncio.Event()

    async def call(self, function, *args):
        """``function(*args)`` on the request's thread, outside the loop; its result or exception."""
        future = self._loop.create_future()
        self._pending.append((function, args, future))
        self.asked.set()
        return await future

    def run_pending(self) -> None:
        self.asked.clear()
        while self._pending:
            function, args, future = self._pending.popleft()
            try:
                future.set_result(function(*args))
            except Exception as error:  # handed to the coroutine that asked, which decides
                future.set_exception(error)


def _thread_loop() -> asyncio.AbstractEventLoop:
    loop = getattr(_local, "loop", None)
    if loop is None or loop.is_closed():
        loop = _local.loop = asyncio.new_event_loop()
    return loop


def run_here(coroutine_function, *args):
    """Run ``coroutine_function(request_thread, *args)`` to completion on this thread; return its
    result or raise its exception."""
    loop = _thread_loop()
    request_thread = RequestThread(loop)
    task = loop.create_task(coroutine_function(request_thread, *args))

    async def step():
        asked = asyncio.ensure_future(request_thread.asked.wait())
        try:
            await asyncio.wait({task, asked}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            asked.cancel()

    while not task.done():
        loop.run_until_complete(step())
        request_thread.run_pending()
    return task.result()
