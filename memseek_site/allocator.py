"""Keeping freed memory for reuse instead of handing every large array's pages back to the kernel.

glibc serves an allocation above its mmap threshold with fresh pages from the kernel and unmaps
them when it is freed, and it trims the top of its heap once more than its trim threshold lies
free there. Either way the next allocation of that size touches new pages, and every first touch
of a page is a fault. An exact BM25 query over a million records allocates some tens of MB of
arrays (``catalog_app.lexical.bm25_topk``), and those faults cost as much as the arithmetic.
``retain_freed_memory`` raises both thresholds, so arrays up to 32 MiB (glibc's ceiling for the
mmap threshold) come from the heap, and up to ``MALLOC_RETAIN_BYTES`` of free heap stays mapped
for the next query: a process keeps up to that much more resident memory. Only glibc has
``mallopt``; elsewhere nothing changes.
"""
from __future__ import annotations

import ctypes

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD_MAX = 32 * 1024 * 1024


def retain_freed_memory(retain_bytes: int) -> bool:
    """Keep up to ``retain_bytes`` of freed heap mapped (0: glibc's own defaults); returns
    whether the C library took the setting."""
    if retain_bytes <= 0:
        return False
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is None:
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, min(retain_bytes, _MMAP_THRESHOLD_MAX))
                and mallopt(_M_TRIM_THRESHOLD, min(retain_bytes, 2 ** 31 - 1)))
