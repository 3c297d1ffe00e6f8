"""Worker signals.

- A worker's consumer gets the ``PendingRecovery`` step: while connected to the broker, its main
  process keeps re-enqueueing records whose task a killed worker or the broker lost (``recovery``).
- The pool processes share the machine's cores for the bundled embedding model: before the pool
  starts, ``OMP_NUM_THREADS`` is set to the usable cores divided by the concurrency (at least 1),
  unless it is already set. On two cores two processes with one torch thread each encode 15-40%
  more texts per second than one process with two (``bench/results/ingest.md``), and two
  processes with two threads each oversubscribe the cores.
- Each pool process loads the bundled embedding model (the default provider) as it starts, in a
  background thread: Celery kills a pool process whose start-up handlers block for more than
  four seconds. The first task that needs the model waits for that load instead of starting its
  own; a failed load is logged and the task reports it as any embedding failure.
"""
import logging
import os
import threading
import time

from celery.signals import worker_init, worker_process_init

logger = logging.getLogger(__name__)


@worker_init.connect(dispatch_uid="catalog_app.recover_pending_records")
def add_pending_recovery_step(sender=None, **kwargs):
    # worker_init comes before the worker builds its consumer, whose steps are read then.
    from .recovery import PendingRecovery

    sender.app.steps["consumer"].add(PendingRecovery)


@worker_init.connect(dispatch_uid="catalog_app.share_cores_among_pool_processes")
def share_cores_among_pool_processes(sender=None, **kwargs):
    concurrency = getattr(sender, "concurrency", None)
    if "OMP_NUM_THREADS" in os.environ or not isinstance(concurrency, int) or concurrency < 1:
        return
    from .embedding import torch_threads_per_process

    os.environ["OMP_NUM_THREADS"] = str(torch_threads_per_process(concurrency))


@worker_process_init.connect(dispatch_uid="catalog_app.load_bundled_model")
def load_bundled_model_in_background(sender=None, **kwargs):
    threading.Thread(target=load_bundled_model, name="load-bundled-model", daemon=True).start()


def load_bundled_model() -> None:
    """Load the bundled model on the configured runtime now, logging how long it took; a model
    that cannot load is logged, not raised (the first embedding call reports it as a 503)."""
    from memseek_site.conf import memseek_setting

    from .embedding import EmbeddingUnavailable, local_encoder

    started = time.perf_counter()
    try:
        local_encoder(memseek_setting("EMBEDDING_RUNTIME"))
    except EmbeddingUnavailable as error:
        logger.warning("process %d could not load the bundled embedding model: %s", os.getpid(), error.detail)
        return
    logger.info("process %d loaded the bundled embedding model in %.1f s", os.getpid(),
                time.perf_counter() - started)
