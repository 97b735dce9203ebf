"""The run reads in the order it happens (issue 44.1): the planner derives the plans and knows
nothing of how they are driven; bench.run drives them and reaches planning only through the
planner's public face; no file of bench.run is over 500 lines."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.cli import app
from bench.own.typed import TypeRequest
from bench.planner import Filters, SuiteRequest, plan_cells
from tests.paths import FIXTURES, REPO
from tests.ticket_agent import TICKET_MODEL

RUN = REPO / "bench" / "run"
PLANNER = REPO / "bench" / "planner"
CASSETTES = FIXTURES / "cassettes" / "pydantic-ai"


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


def _listed(*args: str) -> dict[tuple[str, str], set[str]]:
    """``bench run --dry-run --list``: each (adapter, scenario)'s ``answers`` values."""
    result = CliRunner().invoke(app, ["run", *args, "--dry-run", "--list"])
    assert result.exit_code == 0, result.stderr
    header, *lines = result.stdout.splitlines()
    rows = [dict(zip(header.split("\t"), line.split("\t"), strict=True)) for line in lines]
    found: dict[tuple[str, str], set[str]] = {}
    for row in rows:
        name = row["sdk"] if row["agent"] == "-" else row["agent"]
        found.setdefault((name, row["scenario"]), set()).add(row["answers"])
    return found


def test_each_plan_says_where_its_answers_come_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A built-in cell answers its scenario's task; a ``--cassettes`` replay adds the folder; the
    drawn tasks name the task drawn and the folder; a user's agent names itself (and its tool in
    a tool scenario of its own); ``bench pick --type`` plans name the user's type."""
    out = ["--out", str(tmp_path / "results")]
    builtin = _listed("--sdk", "pydantic-ai", "--scenario", "valid", "--scenario", "tool_ok", *out)
    assert builtin == {("pydantic-ai", "valid"): {"task person"}, ("pydantic-ai", "tool_ok"): {"task order_lookup"}}
    replayed = _listed("--sdk", "pydantic-ai", "--scenario", "valid", "--cassettes", str(CASSETTES), *out)
    assert replayed == {("pydantic-ai", "valid"): {f"task person, recorded in {CASSETTES}"}}
    drawn = _listed("--sdk", "pydantic-ai", "--scenario", "valid", "--cassettes", str(CASSETTES),
                    "--tasks", "cassettes", *out)  # fmt: skip
    ((answers,),) = drawn.values()
    folder = f" of cassettes:{CASSETTES.name}, recorded in {CASSETTES}"
    assert answers.startswith("drawn task ") and answers.endswith(folder)
    project = tmp_path / "project"
    shutil.copytree(REPO / "examples" / "own_agent", project, ignore=shutil.ignore_patterns("baseline", "tests"))
    monkeypatch.chdir(project)
    own = _listed("--agent", "support", "--scenario", "valid", *out)
    assert own == {("support", "valid"): {"agent support's type"}}
    (tmp_path / "tickets.py").write_text(TICKET_MODEL, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    request = SuiteRequest(sdks=("pydantic-ai",), filters=Filters(scenarios=frozenset({"valid"})),
                           output_type=TypeRequest("tickets:Ticket"), project=tmp_path)  # fmt: skip
    _, plans = plan_cells(request, warn=lambda line: None)
    assert {plan.answers for plan in plans} == {"type tickets:Ticket"}


@pytest.mark.slow
def test_a_machine_lacking_a_sent_plans_environment_prepares_it(tmp_path: Path) -> None:
    """A Ray node sent plans whose release environment it does not have prepares that one (the
    release the environment's name is), as planning did, and drives the plans in it."""
    from dataclasses import replace

    from bench.planner import drive_here

    cells = Filters(modes=frozenset({"native"}), protocols=frozenset({"openai-chat"}),
                    variants=frozenset({"default"}), scenarios=frozenset({"valid"}))  # fmt: skip
    request = SuiteRequest(sdks=("openai-agents",), releases=("openai-agents==0.15.0",), filters=cells)
    _, plans = plan_cells(request, warn=lambda line: None)
    built = {plan.environment for plan in plans}
    assert len(built) == 1 and None not in built
    elsewhere = tuple(replace(plan, environment=replace(plan.environment, path=tmp_path / "gone")) for plan in plans)
    adapters, here = drive_here(request, elsewhere, warn=lambda line: None)
    assert here == plans and set(adapters) == {"openai-agents"}
