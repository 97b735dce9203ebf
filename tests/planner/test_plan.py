"""The run reads in the order it happens (issue 44.1): the planner derives the plans and knows
nothing of how they are driven; bench.run drives them and reaches planning only through the
planner's public face; no file of bench.run is over 500 lines."""

from __future__ import annotations

import ast

from tests.paths import REPO

RUN = REPO / "bench" / "run"
PLANNER = REPO / "bench" / "planner"


def _imported(path: object) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))  # type: ignore[attr-defined]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_the_planner_imports_nothing_of_the_run() -> None:
    reaching = {p.name: sorted(m for m in _imported(p) if m.startswith("bench.run")) for p in PLANNER.glob("*.py")}
    assert {name: mods for name, mods in reaching.items() if mods} == {}


def test_the_run_reaches_planning_through_its_face_only() -> None:
    """``bench.planner`` and the plan type (``bench.planner.cells``, through bench/run/plan.py):
    never the planner's steps (adapters, releases, narrowing), which a run knows nothing of."""
    faces = {"bench.planner", "bench.planner.cells"}
    reaching = {
        p.name: sorted(m for m in _imported(p) if m.startswith("bench.planner") and m not in faces)
        for p in RUN.glob("*.py")
    }
    assert {name: mods for name, mods in reaching.items() if mods} == {}


def test_no_file_of_the_run_is_over_500_lines() -> None:
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in RUN.glob("*.py")}
    assert {name: lines for name, lines in sizes.items() if lines > 500} == {}
    largest = max((p for p in (REPO / "bench").rglob("*.py")), key=lambda p: len(p.read_text().splitlines()))
    assert largest.name != "suite.py", largest
