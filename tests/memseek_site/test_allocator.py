"""``retain_freed_memory``: a freed large allocation stays in the heap for the next one instead
of going back to the kernel (each case in a fresh interpreter, whose allocator state no earlier
test has moved)."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FREED = 16 * 1024 * 1024

_PROBE = """
import ctypes, sys
sys.path.insert(0, {root!r})
from memseek_site.allocator import retain_freed_memory

class Info(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]

libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.mallinfo2.restype = Info
took = retain_freed_memory({retain})
block = libc.malloc({size})
ctypes.memset(block, 1, {size})
libc.free(block)
print(int(took), libc.mallinfo2().fordblks)
"""


def probe(retain: int) -> tuple[bool, int]:
    code = _PROBE.format(root=str(ROOT), retain=retain, size=FREED)
    took, free_in_heap = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                                        text=True).stdout.split()
    return took == "1", int(free_in_heap)


@pytest.fixture(autouse=True)
def _glibc():
    import ctypes

    if not hasattr(ctypes.CDLL(None), "mallinfo2"):
        pytest.skip("the allocator setting applies to glibc (mallopt, mallinfo2), which this C library is not")


def test_a_freed_large_allocation_stays_in_the_heap():
    took, free_in_heap = probe(256 * 1024 * 1024)
    assert took
    assert free_in_heap >= FREED


def test_zero_keeps_the_c_librarys_defaults_which_hand_it_back():
    took, free_in_heap = probe(0)
    assert not took
    assert free_in_heap < FREED
