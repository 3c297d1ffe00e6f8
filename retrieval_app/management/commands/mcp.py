"""``python manage.py mcp``: the stdio bridge (``retrieval_app.mcp.stdio``).

``manage.py`` runs the bridge itself before Django is set up (an agent host waits on its start);
this command is the same bridge for ``manage.py help`` and ``call_command``.
"""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from retrieval_app.mcp.stdio import main


class Command(BaseCommand):
    help = ("Serve the workspace's MCP tools over stdio (MEMSEEK_URL, MEMSEEK_API_KEY); --check prints them "
            "without starting a session.")

    def add_arguments(self, parser):
        parser.add_argument("--check", action="store_true", help="print the tools and exit")

    def handle(self, *args, check, **options):
        if main(["--check"] if check else []) != 0:
            raise CommandError("the MCP stdio bridge failed (see above)")
