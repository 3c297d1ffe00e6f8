"""The process of an API host: ``python -m deploy.cluster.api_host HOST:PORT WORKERS`` replaces
itself with gunicorn exactly as ``manage.py quickstart`` serves the API (its command line and
environment), so a cluster host and a single-machine server are configured in one place."""
import os
import sys

import django


def main() -> None:
    addrport, workers = sys.argv[1], int(sys.argv[2])
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memseek_site.settings")
    django.setup()
    from catalog_app.management.commands.quickstart import gunicorn_argv, gunicorn_environment

    os.execvpe(sys.executable, gunicorn_argv(addrport, workers), gunicorn_environment(os.environ, workers))


if __name__ == "__main__":
    main()
