"""No import circle inside ``catalog_app``: the graph of its modules, read from the source with
``ast`` (every ``import`` and ``from ... import``, those inside functions too, since a deferred
import is still a dependency that only waits for its first call), has no cycle. A failure prints
each circle, one module after another.

Migrations are left out (Django loads them by name, they import nothing of the app's code)."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "catalog_app"


def module_files(package: str) -> dict[str, tuple[Path, bool]]:
    """Every module of ``package`` by dotted name: its file and whether it is a package's ``__init__``."""
    modules = {}
    for path in (ROOT / package).rglob("*.py"):
        relative = path.relative_to(ROOT).with_suffix("")
        if "migrations" in relative.parts:
            continue
        parts = list(relative.parts)
        is_package = parts[-1] == "__init__"
        modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return modules


def imported_names(tree: ast.AST, module: str, is_package: bool):
    """Every dotted name ``tree`` imports, relative imports resolved against ``module``; for
    ``from m import x``, both ``m`` and ``m.x`` (``x`` may be a submodule)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[:len(base) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            yield source
            yield from (f"{source}.{alias.name}" for alias in node.names)


def import_graph(package: str) -> dict[str, set[str]]:
    """Each module of ``package`` and the modules of ``package`` it imports (a name that is not a
    module counts as the nearest enclosing module; the package's own ``__init__`` is left out)."""
    modules = module_files(package)
    graph: dict[str, set[str]] = {}
    for module, (path, is_package) in modules.items():
        targets = set()
        for name in imported_names(ast.parse(path.read_text(), str(path)), module, is_package):
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name not in (module, package):
                targets.add(name)
        graph[module] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle through each strongly connected component of more than one module (Tarjan),
    as the modules in import order, the first repeated at the end."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_circle(graph, component) for component in components]


def _circle(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A path from the component's first module back to itself inside the component (breadth first)."""
    start = min(component)
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(graph[node] & component):
                if target == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if target not in previous:
                    previous[target] = node
                    following.append(target)
        frontier = following
    raise AssertionError(f"no circle through {start}")


def test_catalog_app_has_no_import_circle():
    graph = import_graph(PACKAGE)
    assert len(graph) > 50 and "catalog_app.lexical.maintenance" in graph["catalog_app.services.record_ingest"]
    found = cycles(graph)
    assert not found, "import circles in catalog_app:\n" + "\n".join(" -> ".join(circle) for circle in found)


def test_a_circle_is_found_and_printed_in_import_order():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert cycles(graph) == [["a", "b", "c", "a"]]


def test_a_deferred_import_inside_a_function_counts():
    tree = ast.parse("def f():\n    from ..tasks import enqueue\n")
    assert "catalog_app.tasks" in set(imported_names(tree, "catalog_app.lexical.maintenance", False))
