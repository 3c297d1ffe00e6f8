"""``python manage.py mcp``: the MCP server over stdio for a local agent host.

It talks to a running Memseek API, never to the database: ``MEMSEEK_URL`` (the API's base URL)
and ``MEMSEEK_API_KEY`` (a workspace key) say which one and as whom, and every tool call is one
HTTP request to the route the tool names. ``--check`` prints the active declaration's tools and
exits without starting a session (exit status 1 when the API refuses).
"""
from __future__ import annotations

import functools
import os

import anyio
from django.core.management.base import BaseCommand, CommandError
from mcp.shared.exceptions import MCPError

from retrieval_app.mcp.routes import HttpRoutes
from retrieval_app.mcp.server import Allowlist, build_server, listing_over_routes


class Command(BaseCommand):
    help = ("Serve the workspace's MCP tools over stdio (MEMSEEK_URL, MEMSEEK_API_KEY); --check prints them "
            "without starting a session.")

    def add_arguments(self, parser):
        parser.add_argument("--check", action="store_true", help="print the tools and exit")

    def handle(self, *args, check, **options):
        url, key = os.environ.get("MEMSEEK_URL"), os.environ.get("MEMSEEK_API_KEY")
        if not url or not key:
            raise CommandError("Set MEMSEEK_URL (the API, e.g. http://127.0.0.1:8000) and MEMSEEK_API_KEY "
                               "(a workspace key).")
        try:
            anyio.run(self._check if check else self._serve, url, key)
        except ExceptionGroup as group:
            raise CommandError("; ".join(str(error) for error in group.exceptions)) from None

    async def _check(self, url: str, key: str) -> None:
        routes = HttpRoutes(base_url=url, key=key)
        try:
            listing = await _listing(routes)
        finally:
            await routes.aclose()
        interface = listing["interface"]
        if interface is None:
            self.stdout.write("No active MCP declaration: the workspace exports no tools (add mcp/*.yaml).")
            return
        self.stdout.write(f"{interface['name']}@{interface['version']} {interface['title']} "
                          f"(hash {interface['hash'][:12]})")
        for tool in listing["tools"]:
            binding = tool["binding"]
            target = f" {binding['name']}@{binding['version']}" if "version" in binding else ""
            access = "read-only" if tool["annotations"]["readOnlyHint"] else "writes"
            self.stdout.write(f"  {tool['name']:<24} {tool['kind']}{target}  {tool['route']['method']} "
                              f"{tool['route']['path']}  {access}")

    async def _serve(self, url: str, key: str) -> None:
        from mcp.server.stdio import stdio_server

        routes = HttpRoutes(base_url=url, key=key)
        try:
            allowlist = Allowlist(functools.partial(listing_over_routes, routes))
            server = build_server(allowlist, routes, await _listing(routes))
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())
        finally:
            await routes.aclose()


async def _listing(routes: HttpRoutes) -> dict:
    try:
        return await listing_over_routes(routes)
    except MCPError as error:
        raise CommandError(error.message) from None
