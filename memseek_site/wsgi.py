"""WSGI entry point: ``gunicorn memseek_site.wsgi``.

The URL configuration, and with it every view module, is imported here rather than on the first
request (after tracing, when configured, has added its middleware), and then everything loaded
so far is frozen out of the garbage collector: modules, settings and routes live as long as the
worker, and unfrozen, every full collection of the worker would walk all of them again.
"""
import gc
import os
from importlib import import_module

from django.conf import settings
from django.core.wsgi import get_wsgi_application

from memseek_site.tracing import tracing_configure

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memseek_site.settings")
# Before the application loads its middleware: the Django instrumentation adds its own.
tracing_configure()
application = get_wsgi_application()
import_module(settings.ROOT_URLCONF)
gc.freeze()
