"""``tools()`` (``GET /tools``) through both clients against a live server, and a closed client
failing with ``ClientClosed`` (a ``MemseekError``), not a raw httpx error."""
from __future__ import annotations

import anyio
import httpx
import pytest

from memseek_client import AsyncMemseekClient, ClientClosed, MemseekClient, MemseekError, Unauthorized
from memseek_client.models import Tool, ToolList

from .conftest import LIVE
from tests.conftest import EXAMPLE_TOOL_NAMES

pytestmark = LIVE


def test_tools_lists_the_example_declaration_typed(client, live):
    listing = client.tools()
    assert isinstance(listing, ToolList) and listing.interface is not None
    assert (listing.interface.name, listing.interface.version) == ("agent", 1)
    assert [tool.name for tool in listing.tools] == EXAMPLE_TOOL_NAMES
    remember = next(tool for tool in listing.tools if tool.name == "remember")
    assert isinstance(remember, Tool) and remember.kind == "ingest"
    assert remember.annotations.read_only is False and remember.route.method == "POST"
    assert remember.binding["name"] == "main" and "entity" in remember.input_schema["properties"]
    raw = httpx.get(f"{live.url}/tools", headers={"Authorization": f"Bearer {live.key}"}).json()
    assert [tool["hash"] for tool in raw["tools"]] == [tool.hash for tool in listing.tools]


def test_tools_with_a_wrong_key_is_unauthorized(live):
    with MemseekClient(live.url, "not-a-key") as memseek, pytest.raises(Unauthorized):
        memseek.tools()


def test_a_closed_sync_client_raises_client_closed(live):
    memseek = live.client()
    assert memseek.health().ok
    memseek.close()
    with pytest.raises(ClientClosed) as closed:
        memseek.tools()
    assert isinstance(closed.value, MemseekError) and closed.value.code == "client_closed"
    assert "GET /tools" in str(closed.value)
    with live.client() as inside:
        pass
    with pytest.raises(ClientClosed):
        inside.health()


def test_a_closed_async_client_raises_client_closed(live):
    async def main():
        async with AsyncMemseekClient(live.url, live.key) as memseek:
            listing = await memseek.tools()
        with pytest.raises(ClientClosed):
            await memseek.tools()
        return listing

    assert anyio.run(main).interface is not None
