"""The stdio bridge: the workspace's MCP tools served over stdio to a local agent host.

    /path/to/memseek/.venv/bin/python /path/to/memseek/manage.py mcp [--check]

It talks to a running Memseek API, never to the database: ``MEMSEEK_URL`` (the API's base URL)
and ``MEMSEEK_API_KEY`` (a workspace key) say which one and as whom, and every tool call is one
HTTP request to the route the tool names (``routes.HttpRoutes``, which rides out a 503 or a
refused connection with backoff). ``--check`` prints the active declaration's tools and exits
(status 1 when the API refuses).

Start time is what an agent host waits on: ``manage.py`` hands ``mcp`` to ``main`` before Django
is imported, and nothing this module loads imports Django, DRF or Celery, so ``initialize``
costs the interpreter, the MCP SDK and one ``GET /tools``.

The tool list is cached per ``ETag`` of ``GET /tools`` (the hash of the payload): before each
``tools/list`` and ``tools/call`` the bridge revalidates it with ``If-None-Match``, which the API
answers ``304`` without a body while the declaration is unchanged, so a tool dropped from the
active declaration still fails at once. While the API is away the last list stands.
"""
from __future__ import annotations

import argparse
import os
import sys

import anyio
import httpx
from mcp.shared.exceptions import MCPError

from .routes import HttpRoutes
from .server import Allowlist, build_server, listing_over_routes

USAGE = ("Set MEMSEEK_URL (the API, e.g. http://127.0.0.1:8000) and MEMSEEK_API_KEY (a workspace key).")


class CachedListing:
    """``GET /tools`` through ``routes``, kept with its ``ETag`` and revalidated at each use."""

    def __init__(self, routes: HttpRoutes, listing: dict, etag: str | None):
        self._routes = routes
        self.listing = listing
        self.etag = etag

    @classmethod
    async def read(cls, routes: HttpRoutes) -> CachedListing:
        listing, etag = await listing_over_routes(routes)
        return cls(routes, listing, etag)

    async def __call__(self) -> dict:
        if self.etag is None:
            return self.listing
        try:
            listing, etag = await listing_over_routes(self._routes, if_none_match=self.etag)
        except (MCPError, httpx.TransportError):
            # The API is away (503 after the retries, or unreachable): the last list stands,
            # and the call itself reports the API's state as a tool error.
            return self.listing
        if listing is not None:
            self.listing, self.etag = listing, etag
        return self.listing


def main(argv: list[str] | None = None) -> int:
    """Run the bridge (or ``--check``); the process's exit status."""
    parser = argparse.ArgumentParser(prog="manage.py mcp", description=(
        "Serve the workspace's MCP tools over stdio (MEMSEEK_URL, MEMSEEK_API_KEY); --check prints them without "
        "starting a session."))
    parser.add_argument("--check", action="store_true", help="print the tools and exit")
    options = parser.parse_args(argv)
    url, key = os.environ.get("MEMSEEK_URL"), os.environ.get("MEMSEEK_API_KEY")
    if not url or not key:
        print(f"CommandError: {USAGE}", file=sys.stderr)
        return 1
    try:
        anyio.run(check if options.check else serve, url, key)
    except MCPError as error:
        print(f"CommandError: {error.error.message}", file=sys.stderr)
        return 1
    except httpx.TransportError as error:
        print(f"CommandError: cannot reach {url} ({type(error).__name__}: {error}); is the API running?",
              file=sys.stderr)
        return 1
    return 0


async def check(url: str, key: str) -> None:
    routes = HttpRoutes(base_url=url, key=key)
    try:
        listing = (await CachedListing.read(routes)).listing
    finally:
        await routes.aclose()
    interface = listing["interface"]
    if interface is None:
        print("No active MCP declaration: the workspace exports no tools (add mcp/*.yaml).")
        return
    print(f"{interface['name']}@{interface['version']} {interface['title']} (hash {interface['hash'][:12]})")
    for tool in listing["tools"]:
        binding = tool["binding"]
        target = f" {binding['name']}@{binding['version']}" if "version" in binding else ""
        access = "read-only" if tool["annotations"]["readOnlyHint"] else "writes"
        print(f"  {tool['name']:<24} {tool['kind']}{target}  {tool['route']['method']} {tool['route']['path']}  "
              f"{access}")


async def serve(url: str, key: str) -> None:
    from mcp.server.stdio import stdio_server

    routes = HttpRoutes(base_url=url, key=key)
    try:
        cached = await CachedListing.read(routes)
        server = build_server(Allowlist(cached), routes, cached.listing)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        await routes.aclose()


if __name__ == "__main__":
    sys.exit(main())
