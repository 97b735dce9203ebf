"""The CLI layer owns commands and exit codes: the library never imports it (nor typer), and
every exit code is documented where users read about it."""

from __future__ import annotations

import ast
from pathlib import Path

from bench.cli.exit_codes import ExitCode

REPO = Path(__file__).resolve().parent.parent


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_the_library_never_imports_the_cli_or_typer() -> None:
    offenders = {}
    for path in [*(REPO / "bench").rglob("*.py"), *(REPO / "adapters").rglob("*.py")]:
        if (REPO / "bench" / "cli") in path.parents:
            continue
        bad = {
            m for m in imported_modules(path) if m in ("typer", "bench.cli") or m.startswith(("bench.cli.", "typer."))
        }
        if bad:
            offenders[str(path.relative_to(REPO))] = sorted(bad)
    assert offenders == {}


def test_gate_and_its_renderings_do_not_import_each_other() -> None:
    assert not {
        m for m in imported_modules(REPO / "bench" / "gate" / "compare.py") if m.startswith("bench.gate.output")
    }


def test_every_exit_code_is_documented() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    ci = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    for code in ExitCode:
        assert f"| {code.value} |" in readme, f"README exit-code table lacks {code.name}"
    for code in ExitCode:
        if code not in (ExitCode.INTERRUPTED,):
            assert f"| {code.value} |" in ci, f"docs/ci.md exit-code table lacks {code.name}"
