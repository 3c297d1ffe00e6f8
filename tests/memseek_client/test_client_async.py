"""``AsyncMemseekClient``: the same routes, models, errors, pages and retries as the sync client,
awaited, against the live server and the scripted one."""
from __future__ import annotations

import asyncio

import pytest

from memseek_client import (AsyncMemseekClient, NotFound, RecordInput, RetryPolicy, Timeout, Unauthorized,
                            Unavailable, Unprocessable)
from memseek_client.models import Health, Record, SearchResponse, TimelineRow

from .conftest import LIVE
from .scripted_server import Reply, ScriptedServer

pytestmark = LIVE
UNAVAILABLE = {"error": "database_unavailable", "detail": "the database cannot be reached; retry shortly"}


class RecordingAsyncSleep:
    def __init__(self):
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        await asyncio.sleep(seconds)


def test_async_writes_reads_pages_and_searches(live):
    async def scenario():
        async with AsyncMemseekClient(live.url, live.key) as memseek:
            inserted = (await memseek.write_records([
                RecordInput(entity="contact.async", collection="main", type="note", text=f"async note {index}")
                for index in range(5)])).inserted
            record, rows, search = await asyncio.gather(
                memseek.get_record(inserted[0].id),
                _collect(memseek.iter_timeline("contact.async", limit=2)),
                memseek.search("async note", mode="text", scope={"entities": ["contact.async"]}, k=5))
            return inserted, record, rows, search

    inserted, record, rows, search = asyncio.run(scenario())
    assert isinstance(record, Record) and record.content["text"] == "async note 0"
    assert all(isinstance(row, TimelineRow) for row in rows)
    assert [row.id for row in rows] == [outcome.id for outcome in reversed(inserted)]
    assert isinstance(search, SearchResponse) and {hit.id for hit in search.hits} == {o.id for o in inserted}


def test_async_errors_are_the_same_classes(live):
    async def scenario():
        async with AsyncMemseekClient(live.url, live.key) as memseek:
            with pytest.raises(NotFound) as missing:
                await memseek.get_record("00000000-0000-4000-8000-000000000000")
            with pytest.raises(Unprocessable) as invalid:
                await memseek.timeline("contact.async", limit=-1)
        async with AsyncMemseekClient(live.url, "wrong") as stranger:
            with pytest.raises(Unauthorized) as unauthorized:
                await stranger.collections()
        return missing.value, invalid.value, unauthorized.value

    missing, invalid, unauthorized = asyncio.run(scenario())
    assert (missing.status, missing.code) == (404, "record_not_found")
    assert (invalid.status, invalid.path) == (422, "limit")
    assert (unauthorized.status, unauthorized.code) == (401, "unauthorized")


def test_async_retries_503_twice_then_succeeds_honouring_retry_after():
    sleep = RecordingAsyncSleep()

    async def scenario(url):
        async with AsyncMemseekClient(url, "key", retry=RetryPolicy(attempts=3, backoff_base=0.2),
                                      sleep=sleep) as memseek:
            return await memseek.health()

    with ScriptedServer(Reply(503, UNAVAILABLE, (("Retry-After", "1"),)), Reply(503, UNAVAILABLE),
                        Reply(200, {"ok": True, "db": True})) as server:
        assert asyncio.run(scenario(server.url)) == Health(ok=True, db=True)
    assert len(server.seen) == 3 and sleep.waits[0] == 1.0 and 0 <= sleep.waits[1] <= 0.4
    assert server.seen[1].at - server.seen[0].at >= 1.0


def test_async_gives_up_after_the_attempt_bound_and_times_out_without_retrying():
    sleep = RecordingAsyncSleep()

    async def unavailable(url):
        async with AsyncMemseekClient(url, "key", retry=RetryPolicy(attempts=2), sleep=sleep) as memseek:
            await memseek.health()

    async def slow(url):
        async with AsyncMemseekClient(url, "key", timeout=0.3, sleep=sleep) as memseek:
            await memseek.health()

    with ScriptedServer(Reply(503, UNAVAILABLE, (("Retry-After", "0"),))) as server:
        with pytest.raises(Unavailable):
            asyncio.run(unavailable(server.url))
    assert len(server.seen) == 2 and sleep.waits == [0.0]
    with ScriptedServer(Reply(200, {"ok": True, "db": True}, delay_s=5)) as server:
        with pytest.raises(Timeout):
            asyncio.run(slow(server.url))
    assert len(server.seen) == 1 and sleep.waits == [0.0]


async def _collect(iterator) -> list:
    return [item async for item in iterator]
