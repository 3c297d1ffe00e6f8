"""The search engine core is pure: every module of ``search_app/engine/`` imports in a fresh
interpreter without Django settings, and none of them loads ``django.db`` (SQL lives in
``search_app/backends/`` and the pipeline that drives them)."""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "search_app" / "engine"

PROBE = """
import importlib, json, sys
loaded = {}
for name in sys.argv[1:]:
    importlib.import_module(name)
    loaded[name] = sorted(m for m in sys.modules if m == "django.db" or m.startswith("django.db."))
print(json.dumps(loaded))
"""


def test_every_engine_module_imports_without_settings_and_loads_no_database_layer():
    modules = sorted(f"search_app.engine.{path.stem}" for path in ENGINE.glob("*.py") if path.stem != "__init__")
    assert len(modules) > 10
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    for module in modules:  # one interpreter per module: each is checked on its own imports
        result = subprocess.run([sys.executable, "-c", PROBE, module], cwd=ROOT, env=env, capture_output=True,
                                text=True, timeout=120)
        assert result.returncode == 0, f"{module} does not import without settings:\n{result.stderr}"
        assert json.loads(result.stdout)[module] == [], f"{module} loads the database layer"
