"""The WSGI entry point loads the routes and their views before the first request, and freezes
what it loaded out of the garbage collector."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_entry_point_loads_the_views_then_freezes_them():
    probe = ("import gc, sys; import memseek_site.wsgi; "
             "print('catalog_app.api.records_write' in sys.modules, gc.get_freeze_count() > 0, len(gc.get_objects()))")
    loaded, frozen, tracked = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True,
                                             check=True).stdout.split()
    assert (loaded, frozen) == ("True", "True")
    assert int(tracked) < 1000  # left to collect: what was created after the freeze
