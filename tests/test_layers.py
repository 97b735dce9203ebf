"""The import contract: the layering ``bench.LAYERS`` declares, and public faces across packages.

Every import statement of ``bench/`` and ``adapters/`` is read from the source (``ast``), imports
inside functions included, so a lazy import cannot dodge a layer.
"""

from __future__ import annotations

import ast
from pathlib import Path

import bench

ROOT = Path(__file__).resolve().parent.parent
LAYER = {package: level for level, group in enumerate(bench.LAYERS) for package in group}


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[str, tuple[str, ...], int]]:
    """(module, names taken from it, line) for every absolute import in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, (), node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, tuple(alias.name for alias in node.names), node.lineno))
    return found


def _package(module: str) -> str | None:
    """``bench.run.suite`` -> ``run``; ``adapters.langchain.own`` -> ``adapters.langchain``."""
    parts = module.split(".")
    if parts[0] == "bench" and len(parts) > 1:
        return parts[1]
    if parts[0] == "adapters":
        return ".".join(parts[:2])
    return None


def _sources() -> list[Path]:
    return sorted([*(ROOT / "bench").rglob("*.py"), *(ROOT / "adapters").rglob("*.py")])


def layer_violations(files: list[Path]) -> list[str]:
    wrong = []
    for path in files:
        importer = _package(_module(path))
        for module, names, line in _imports(path):
            # ``from bench import x`` imports the package bench.x
            targets = [f"bench.{name}" for name in names] if module == "bench" else [module]
            for imported in filter(None, map(_package, targets)):
                if importer == imported or importer is None:
                    continue
                where = f"{path.relative_to(ROOT)}:{line} imports {module}"
                if importer.startswith("adapters"):
                    if imported.startswith("adapters") or imported not in bench.ADAPTERS_MAY_IMPORT:
                        wrong.append(f"{where} (an adapter may import {', '.join(bench.ADAPTERS_MAY_IMPORT)})")
                elif imported.startswith("adapters"):
                    wrong.append(f"{where} (bench reaches adapters through entry points only)")
                elif importer not in LAYER or imported not in LAYER:
                    wrong.append(f"{where} (a package missing from bench.LAYERS)")
                elif LAYER[imported] >= LAYER[importer]:
                    wrong.append(f"{where} ({imported} is not below {importer})")
    return wrong


def private_imports(files: list[Path]) -> list[str]:
    """``from X import _name`` where X belongs to another package than the importer."""
    wrong = []
    for path in files:
        importer = _package(_module(path))
        for module, names, line in _imports(path):
            if _package(module) in (importer, None):
                continue
            wrong += [f"{path.relative_to(ROOT)}:{line} takes {module}.{n}" for n in names if n.startswith("_")]
    return wrong


def test_every_package_is_in_a_layer() -> None:
    packages = {p.name for p in (ROOT / "bench").iterdir() if (p / "__init__.py").exists()}
    assert packages == set(LAYER), f"packages without a layer or layers without a package: {packages ^ set(LAYER)}"


def test_no_package_imports_its_own_layer_or_above() -> None:
    assert layer_violations(_sources()) == []


def test_no_private_name_crosses_a_package() -> None:
    assert private_imports(_sources()) == []


def test_every_package_says_what_it_owns() -> None:
    for init in (ROOT / "bench").glob("*/__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc and len(doc) > 80, f"{init.relative_to(ROOT)} needs a docstring saying what it owns"


def test_the_checks_see_a_violation(tmp_path: Path) -> None:
    fake = ROOT / "bench" / "core" / "_layer_probe.py"
    fake.write_text("from bench.run.suite import run_suite\nfrom bench.gate.compare import _private\n")
    try:
        assert any("run is not below core" in v for v in layer_violations([fake]))
        assert private_imports([fake]) == ["bench/core/_layer_probe.py:2 takes bench.gate.compare._private"]
    finally:
        fake.unlink()
