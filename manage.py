#!/usr/bin/env python
"""Django's command-line utility for Memseek."""
import os
import sys


def main():
    if sys.argv[1:2] == ["mcp"]:
        # The stdio bridge calls the API over HTTP and never needs Django; an agent host waits
        # on its start, so it runs before Django is imported (retrieval_app.mcp.stdio).
        from retrieval_app.mcp.stdio import main as bridge

        sys.exit(bridge(sys.argv[2:]))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memseek_site.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
