"""The SDK is its own package: ``pip install ./memseek_client`` installs it (with every module
and ``py.typed``) without writing into the checkout, and it imports in a fresh interpreter
without loading Django or any agent framework (``memseek_client.integrations`` is imported only
by name)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "memseek_client"
CHECK = ("import sys, memseek_client, memseek_client.models as m; "
         "assert 'django' not in sys.modules, sorted(n for n in sys.modules if n.startswith('django')); "
         "assert not {'langchain_core', 'langgraph', 'agents'} & set(sys.modules); "
         "assert m.Brief and memseek_client.AsyncMemseekClient and memseek_client.MemseekClient; "
         "print(memseek_client.__file__)")


def test_importing_the_sdk_from_the_checkout_loads_no_django():
    done = subprocess.run([sys.executable, "-c", CHECK], cwd=PACKAGE.parent, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()) == PACKAGE / "__init__.py"


def _tree(root: Path) -> set[str]:
    """Every path under ``root`` but Python's byte-code caches (ignored or not)."""
    return {str(path.relative_to(root)) for path in root.rglob("*") if "__pycache__" not in path.parts}


def test_pip_installs_the_package_from_the_checkout_and_the_installed_copy_imports_alone(tmp_path):
    before = _tree(PACKAGE)
    target = tmp_path / "site"
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                                "--no-build-isolation", "--target", str(target), str(PACKAGE)],
                               capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr
    assert _tree(PACKAGE) == before  # no build/, no *.egg-info left behind
    assert (target / "memseek_client" / "py.typed").is_file()
    assert {path.name for path in (target / "memseek_client" / "models").glob("*.py")} >= {
        "__init__.py", "records.py", "reads.py", "search.py", "retrieval.py", "lexical.py", "memory.py"}
    assert {path.name for path in (target / "memseek_client" / "integrations").glob("*.py")} == {
        "__init__.py", "langchain_retriever.py", "langgraph_store.py", "openai_agents_tools.py"}
    elsewhere = tmp_path / "run"
    elsewhere.mkdir()
    done = subprocess.run([sys.executable, "-c", CHECK], cwd=elsewhere, env={"PYTHONPATH": str(target)},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()) == target / "memseek_client" / "__init__.py"
    metadata = next(target.glob("memseek_client-*.dist-info")) / "METADATA"
    # A range, not a pin: installing the SDK never moves an agent framework's httpx down.
    lines = metadata.read_text().splitlines()
    assert "Requires-Dist: httpx<1,>=0.27" in lines
    # The frameworks are extras: installing the SDK alone pulls none of them.
    assert {"Provides-Extra: langchain", "Provides-Extra: langgraph", "Provides-Extra: openai-agents"} <= set(lines)
    assert not [line for line in lines if line.startswith("Requires-Dist:") and "extra ==" not in line
                and "httpx" not in line]
