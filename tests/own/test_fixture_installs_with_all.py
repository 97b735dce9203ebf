"""The README's first command (``pip install -e '.[all]'``) leaves a venv in which the ``misfit``
pytest fixture can be used (issue 25): every distribution the fixture's modules import is a base
dependency of misfit-bench or in its ``all`` extra. pytest was only in ``test``, so a user who set
up as the README says had a fixture whose plugin could not load."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "bench" / "fixture"


def _name(requirement: str) -> str:
    """The normalised distribution name of a requirement string (PEP 503)."""
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert match, requirement
    return re.sub(r"[-_.]+", "-", match.group(0)).lower()


def _closure(project: dict, extras: list[str]) -> set[str]:
    """Distributions ``pip install 'misfit-bench[extras]'`` asks for, self-references followed."""
    optional = project["optional-dependencies"]
    names = {_name(requirement) for requirement in project["dependencies"]}
    pending, seen = list(extras), set()
    while pending:
        extra = pending.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for requirement in optional[extra]:
            if _name(requirement) == "misfit-bench":
                pending += [e.strip() for e in requirement.split("[", 1)[1].rstrip("]").split(",")]
            else:
                names.add(_name(requirement))
    return names


def _imported_distributions() -> set[str]:
    """The third-party distributions bench/fixture's modules import (top-level names mapped
    through the installed packages' metadata)."""
    modules: set[str] = set()
    for source in FIXTURE.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Import):
                modules |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    third_party = modules - set(sys.stdlib_module_names) - {"bench", "adapters", "__future__"}
    providers = packages_distributions()
    return {_name(providers[module][0]) for module in third_party}


def test_every_distribution_the_fixture_imports_comes_with_the_all_extra() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    imported = _imported_distributions()
    assert "pytest" in imported
    assert imported <= _closure(project, ["all"]), imported - _closure(project, ["all"])
