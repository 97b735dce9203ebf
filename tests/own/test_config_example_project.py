"""examples/own_agent as a user copies it (issue 25): its agents load through `bench run --agent
... --dry-run`, the LangChain one a factory of the model handle; its CI workflow installs
misfit-bench from a checkout of its repository, as docs/own-agent.md says it must be installed
(the workflow used to `pip install -e '.[test]'`, resolving misfit-bench from an index, which fails)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from bench.cli import app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "own_agent"
WORKFLOW = EXAMPLE / ".github" / "workflows" / "misfit.yml"


def test_each_declared_agent_plans_through_the_cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(EXAMPLE)
    result = CliRunner().invoke(app, ["run", "--agent", "all", "--dry-run", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    planned = {line.split()[0]: int(line.split()[1]) for line in result.stdout.splitlines() if " cells " in line}
    assert {"support", "triage", "intake"} <= set(planned) and all(planned.values()), result.stdout
    intake = next(a for a in tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["tool"]["bench"]["agents"]
                  if a["name"] == "intake")  # fmt: skip
    source = (EXAMPLE / "helpdesk" / "agents.py").read_text()
    assert intake["agent"] == "helpdesk.agents:make_intake"
    assert re.search(r"def make_intake\(model\):.*?create_agent\(\s*model\.langchain\(\)", source, re.DOTALL)


def test_the_workflow_installs_misfit_bench_from_a_checkout_of_its_repository() -> None:
    steps = yaml.safe_load(WORKFLOW.read_text())["jobs"]["misfit"]["steps"]
    checkouts = [step["with"] for step in steps if step.get("uses", "").startswith("actions/checkout")]
    bench_checkout = next(c for c in checkouts if "repository" in c)
    assert bench_checkout["repository"] == "${{ vars.MISFIT_BENCH_REPOSITORY }}"
    installs = [step["run"] for step in steps if "pip install" in step.get("run", "")]
    path = bench_checkout["path"]
    assert any(f"-e '../{path}[all]'" in line for line in installs), installs
    # Nothing resolves misfit-bench from an index: the project's extras do not name it.
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"].values()
    requirements = [*project["dependencies"], *(r for extra in extras for r in extra)]
    assert not [r for r in requirements if r.replace("_", "-").startswith("misfit-bench")], requirements
    # A job without the variable stops first, naming it, instead of checking out this repository.
    guard = steps[0]
    assert "MISFIT_BENCH_REPOSITORY" in guard["run"] and "exit 2" in guard["run"]
