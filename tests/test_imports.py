"""No module of the package imports a module that imports it (directly or round a longer loop).

Import statements are read from the source (``ast``), lazy ones inside functions included: a
function-level import that closes a loop is still two modules that each need the other.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("bench", "adapters")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The package modules ``path`` imports (``from bench import x`` counts as ``bench.x``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name in modules}


def _graph() -> dict[str, set[str]]:
    files = [path for package in PACKAGES for path in (ROOT / package).rglob("*.py")]
    modules = {_module_name(path) for path in files}
    graph = {_module_name(path): _imports(path, modules) for path in files}
    # A package's __init__ is imported with any of its modules; it is not a loop on its own.
    return {name: {d for d in deps if d != name and not name.startswith(f"{d}.")} for name, deps in graph.items()}


KNOWN: set[tuple[str, str]] = set()
"""Loops left to untie, each an edge to drop (importer, imported). Delete the entry with the loop."""


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                return [*stack[stack.index(dep) :], dep]
            if dep not in state and (found := visit(dep)) is not None:
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)) is not None:
            return found
    return None


def test_no_module_imports_a_module_that_imports_it() -> None:
    graph = _graph()
    for importer, imported in KNOWN:
        graph[importer].discard(imported)
    cycle = _cycle(graph)
    assert cycle is None, "import loop: " + " -> ".join(cycle or [])


def test_every_known_loop_still_exists() -> None:
    graph = _graph()
    gone = [pair for pair in KNOWN if pair[1] not in graph.get(pair[0], set())]
    assert not gone, f"these loops are gone; remove them from KNOWN: {gone}"


def test_the_check_sees_a_loop() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
