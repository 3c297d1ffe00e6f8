"""Worker signals: a worker that starts re-enqueues records that a killed worker left unready.

The handler only sends a task: the worker's main process must not open database connections
that its forked pool processes would inherit.
"""
from celery.signals import worker_ready


@worker_ready.connect(dispatch_uid="catalog_app.recover_pending_records")
def recover_pending_on_worker_ready(sender=None, **kwargs):
    from .tasks import recover_pending_records

    recover_pending_records.delay()
