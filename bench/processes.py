"""Child processes the benchmarks start (gunicorn, a Celery worker): stopping them cleanly."""
from __future__ import annotations

import subprocess


def stop_process(process: subprocess.Popen, log, timeout_s: float = 30) -> None:
    """Terminate ``process`` if it still runs (kill it after ``timeout_s``), then close its ``log``."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    log.close()
