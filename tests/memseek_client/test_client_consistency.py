"""The consistency token (read-your-writes across read replicas): the clients keep the latest WAL
position a response named and send it with every later request, against a real HTTP server on
loopback that answers from a script."""
from __future__ import annotations

import asyncio

from memseek_client import AsyncMemseekClient, MemseekClient

from .scripted_server import Reply, ScriptedServer

HEADER = "Memseek-Consistency-Token"


def _replies(*tokens: str | None) -> list[Reply]:
    return [Reply(200, {"ok": True, "db": True}, ((HEADER, token),) if token is not None else ()) for token in tokens]


def test_the_client_sends_the_latest_position_it_was_given():
    # A later write names a lower position only when it raced another process's write: keep the later one.
    with ScriptedServer(*_replies(None, "0/3A1F2B8", None, "0/1000", "1/0", "garbage", None)) as server:
        with MemseekClient(server.url, "key") as client:
            for _ in range(7):
                client.health()
            assert client.consistency_token == "1/0"
    sent = [seen.headers.get(HEADER) for seen in server.seen]
    assert sent == [None, None, "0/3A1F2B8", "0/3A1F2B8", "0/3A1F2B8", "1/0", "1/0"]


def test_a_token_set_by_hand_is_sent_and_a_malformed_one_is_replaced():
    with ScriptedServer(*_replies(None, "0/10", None)) as server:
        with MemseekClient(server.url, "key") as client:
            client.consistency_token = "not a position"
            client.health()
            client.health()
            client.health()
    assert [seen.headers.get(HEADER) for seen in server.seen] == ["not a position", "not a position", "0/10"]


def test_the_async_client_carries_the_position_the_same_way():
    async def run(url: str) -> str | None:
        async with AsyncMemseekClient(url, "key") as client:
            for _ in range(3):
                await client.health()
            return client.consistency_token

    with ScriptedServer(*_replies("0/20", "0/10", None)) as server:
        assert asyncio.run(run(server.url)) == "0/20"
    assert [seen.headers.get(HEADER) for seen in server.seen] == [None, "0/20", "0/20"]
