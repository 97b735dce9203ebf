"""The user's own ``except`` clauses that name an SDK exception, read with ``ast`` (never run):
what ``bench upgrade`` names, ``file:line``, when the class a release raises is no longer caught.

A name counts as the SDK's class when the file imports it from the SDK's package (``from
pydantic_ai.exceptions import ModelHTTPError``, ``from pydantic_ai import ModelHTTPError as E``)
or spells it through an imported module (``pydantic_ai.exceptions.ModelHTTPError``); a class is
matched by its package and name, since SDKs re-export their exceptions from several modules.
"""

from __future__ import annotations

import ast
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
    for node in ast.walk(tree):
        if not isinstance(node, ast.ExceptHandler) or node.type is None:
            continue
        parts = node.type.elts if isinstance(node.type, ast.Tuple) else [node.type]
        classes = tuple(c for c in (_resolve(part, names, modules) for part in parts) if c is not None)
        if classes:
            out.append(UserHandler(f"{where}:{node.lineno}", ast.unparse(node.type), classes))
    return sorted(out, key=lambda h: int(h.where.rsplit(":", 1)[1]))


def _imports(tree: ast.Module) -> tuple[dict[str, str], dict[str, str]]:
    """Local name -> ``package.Name`` for imported names; local name -> package for modules."""
    names: dict[str, str] = {}
    modules: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            top = node.module.split(".")[0]
            for alias in node.names:
                names[alias.asname or alias.name] = f"{top}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                modules[alias.asname or alias.name.split(".")[0]] = alias.name.split(".")[0]
    return names, modules


def _resolve(node: ast.expr, names: dict[str, str], modules: dict[str, str]) -> str | None:
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.Attribute):
        base = node
        while isinstance(base, ast.Attribute):
            base = base.value  # type: ignore[assignment]
        if isinstance(base, ast.Name):
            top = modules.get(base.id) or names.get(base.id, "").split(".")[0] or None
            return None if top is None else f"{top}.{node.attr}"
    return None
