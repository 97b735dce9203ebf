"""The user's own ``except`` clauses that name an SDK exception, read with ``ast`` (never run):
what ``bench upgrade`` names, ``file:line``, when the class a release raises is no longer caught.

A name counts as the SDK's class when the file imports it from the SDK's package (``from
pydantic_ai.exceptions import ModelHTTPError``, ``from pydantic_ai import ModelHTTPError as E``)
or spells it through an imported module (``pydantic_ai.exceptions.ModelHTTPError``); a class is
matched by its package and name, since SDKs re-export their exceptions from several modules.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass
from pathlib import Path

SKIPPED = frozenset({".git", ".venv", "venv", "env", "node_modules", "__pycache__", "results", "build", "dist"})
"""Folders of a project that are not the user's code (environments, run results, build output)."""


@dataclass(frozen=True)
class UserHandler:
    where: str
    """``path:line``, the path relative to the project."""
    text: str
    """The clause as written after ``except``: ``ModelHTTPError``, ``(ModelHTTPError, ValueError)``."""
    classes: tuple[str, ...]
    """The SDK classes it names, as ``package.Name`` (the top-level package and the class name)."""
    paths: tuple[str, ...] = ()
    """Every class it names as it imports it (``pydantic_ai.exceptions.ModelHTTPError``), the
    builtins among them (``builtins.ValueError``): what the probe imports to ask ``issubclass``."""
    block: str = ""
    """``path:line`` of the ``try`` it belongs to: its clauses together decide what escapes."""

    def names(self, dotted: str) -> bool:
        """Whether the clause names the class ``dotted`` (``pydantic_ai.exceptions.ModelHTTPError``)."""
        return _key(dotted) in self.classes


def _key(dotted: str) -> str:
    parts = dotted.split(".")
    return f"{parts[0]}.{parts[-1]}"


def find_handlers(project: Path) -> list[UserHandler]:
    """Every ``except`` clause under ``project`` naming a class imported from a third-party
    package, in file and line order; a file that does not parse is skipped (it does not run either)."""
    found: list[UserHandler] = []
    for path in sorted(project.rglob("*.py")):
        relative = path.relative_to(project)
        if any(part in SKIPPED or part.startswith(".") for part in relative.parts[:-1]):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        found.extend(_handlers(tree, relative.as_posix()))
    return found


def _handlers(tree: ast.Module, where: str) -> list[UserHandler]:
    names, modules = _imports(tree)
    out = []
    for block in ast.walk(tree):
        if not isinstance(block, ast.Try | ast.TryStar):
            continue
        for node in block.handlers:
            if node.type is None:
                continue
            parts = node.type.elts if isinstance(node.type, ast.Tuple) else [node.type]
            paths = tuple(p for p in (_path(part, names, modules) for part in parts) if p is not None)
            classes = tuple(_key(p) for p in paths if not p.startswith("builtins."))
            if classes:
                text = ast.unparse(node.type)
                out.append(UserHandler(f"{where}:{node.lineno}", text, classes, paths, f"{where}:{block.lineno}"))
    return sorted(out, key=lambda h: int(h.where.rsplit(":", 1)[1]))


def _imports(tree: ast.Module) -> tuple[dict[str, str], dict[str, str]]:
    """Local name -> its dotted path for imported names (``pydantic_ai.exceptions.ModelHTTPError``);
    local name -> dotted module for imported modules."""
    names: dict[str, str] = {}
    modules: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                modules[local] = alias.name if alias.asname else alias.name.split(".")[0]
    return names, modules


def _path(node: ast.expr, names: dict[str, str], modules: dict[str, str]) -> str | None:
    """The dotted path of a class named in an ``except`` (imported, spelled through a module, or
    a builtin exception); None for anything else (a local class, an expression)."""
    if isinstance(node, ast.Name):
        if node.id in names:
            return names[node.id]
        known = getattr(builtins, node.id, None)
        return f"builtins.{node.id}" if isinstance(known, type) and issubclass(known, BaseException) else None
    if isinstance(node, ast.Attribute):
        chain = [node.attr]
        base: ast.expr = node.value
        while isinstance(base, ast.Attribute):
            chain.append(base.attr)
            base = base.value
        if isinstance(base, ast.Name):
            root = modules.get(base.id) or names.get(base.id)
            return None if root is None else ".".join([root, *reversed(chain)])
    return None
