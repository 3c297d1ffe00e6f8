"""The Celery app. Configuration comes from Django settings (``CELERY_*``)."""
import os

from celery import Celery
from celery.signals import worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memseek_site.settings")

app = Celery("memseek_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_process_init.connect(weak=False)
def _trace_worker_process(**_):
    """Tracing in each pool process (memseek_site.tracing), which the prefork parent forked
    before any exporter thread could be started."""
    from .tracing import tracing_configure

    tracing_configure()
