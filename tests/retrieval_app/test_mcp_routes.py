"""How the MCP server reaches the routes in-process: ``loop.run_here`` (the SDK's coroutine and
the blocking views on one thread) and ``InProcessRoutes`` (Django's own handler, the caller's key)."""
from __future__ import annotations

import asyncio
import threading

import pytest

from catalog_app.auth import IN_PROCESS_WORKSPACE, KeyIdentity, key_resolve
from catalog_app.models import CAPABILITIES
from retrieval_app.mcp.loop import run_here
from retrieval_app.mcp.routes import InProcessRoutes


def test_blocking_calls_run_on_the_calling_thread_with_no_loop_running():
    seen = []

    def blocking(value):
        with pytest.raises(RuntimeError):
            asyncio.get_running_loop()  # Django's ORM refuses to run while a loop runs here
        seen.append(threading.current_thread())
        return value * 2

    async def coroutine(request_thread, start):
        first = await request_thread.call(blocking, start)
        second, third = await asyncio.gather(request_thread.call(blocking, first), request_thread.call(blocking, 1))
        return first, second, third

    assert run_here(coroutine, 3) == (6, 12, 2)
    assert seen == [threading.current_thread()] * 3


def test_a_blocking_calls_exception_reaches_the_coroutine_and_its_own_reaches_the_caller():
    def failing():
        raise ValueError("from the view")

    async def caught(request_thread):
        try:
            await request_thread.call(failing)
        except ValueError as error:
            return str(error)

    async def uncaught(request_thread):
        await request_thread.call(failing)

    assert run_here(caught) == "from the view"
    with pytest.raises(ValueError, match="from the view"):
        run_here(uncaught)
    assert run_here(caught) == "from the view"  # the thread's loop is still usable


def _routes(key: str, workspace) -> InProcessRoutes:
    identity = key_resolve(key)[1]
    return InProcessRoutes(key=key, workspace=workspace, identity=identity, host="testserver", scheme="http",
                           request_thread=None)


def test_a_dispatched_route_answers_as_over_http(catalog, workspace_and_key):
    routes = _routes(workspace_and_key[1], catalog)
    answer = routes.dispatch("GET", "/records/not-a-uuid", None, None)
    assert (answer.status, answer.payload["error"]) == (422, "invalid_id")
    answer = routes.dispatch("GET", "/timeline", {"entity": "contact.maria", "nope": "1"}, None)
    assert answer.status == 422 and answer.payload["path"] == "nope"
    assert routes.dispatch("POST", "/views/customer_context/query", None, {"entity": 1}).payload["error"] == \
        "view_parameter"


def test_a_resolved_workspace_is_reused_only_for_the_key_it_was_resolved_for(catalog):
    from rest_framework.test import APIClient

    client = APIClient()
    resolved = (catalog, KeyIdentity(0, frozenset(CAPABILITIES)))
    mismatched = client.get("/tools", HTTP_AUTHORIZATION="Bearer forged", **{IN_PROCESS_WORKSPACE: ("key", resolved)})
    assert mismatched.status_code == 401
    matched = client.get("/tools", HTTP_AUTHORIZATION="Bearer key", **{IN_PROCESS_WORKSPACE: ("key", resolved)})
    assert matched.status_code == 200 and matched.json()["interface"]["name"] == "agent"
    # Over HTTP a header never lands on that environ key: servers put headers under HTTP_*.
    header = client.get("/tools", HTTP_AUTHORIZATION="Bearer key", HTTP_MEMSEEK_WORKSPACE="1")
    assert header.status_code == 401
