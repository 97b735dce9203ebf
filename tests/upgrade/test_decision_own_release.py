"""``bench run --agent NAME --release ...`` runs the user's agent in each release's environment
(issue 23.1): before, the agent was silently dropped and the built-in matrix ran."""

from __future__ import annotations

from pathlib import Path

import pytest
from own_project import bench, write_project

from bench.results.store import latest_run, read_table

SCENARIOS = ["--scenario", "malformed_then_valid", "--scenario", "refusal_then_valid"]


@pytest.mark.slow
def test_a_release_no_agent_uses_is_refused(tmp_path: Path) -> None:
    project = write_project(tmp_path / "project")
    done = bench(project, "run", "--agent", "refunds", "--release", "openai-agents==0.6.9", *SCENARIOS)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr == (
        "error: --release openai-agents==0.6.9: no agent of this run uses openai-agents (refunds on pydantic-ai); "
        "add --sdk openai-agents to measure the built-in adapter on it\n"
    )


@pytest.mark.slow
def test_own_agent_runs_in_each_release(tmp_path: Path) -> None:
    """Every row is the user's agent, once per release: 2.0.0 in its environment with the
    project's dependencies (a worker importing the project), the pin in-process."""
    project = write_project(tmp_path / "project")
    releases = ["--release", "pydantic-ai==2.0.0", "--release", "pydantic-ai@pinned"]
    done = bench(project, "run", "--agent", "refunds", *releases, *SCENARIOS, "--no-progress", "--out", "results")
    assert done.returncode == 0, done.stderr
    runs = read_table(latest_run(project / "results"), "runs").to_pandas()
    assert set(runs["agent"]) == {"refunds"} and set(runs["sdk"]) == {"pydantic-ai"}
    versions = sorted(set(runs["sdk_version"]))
    assert len(versions) == 2 and "2.0.0" in versions, versions
    assert len(runs) == 4 and "harness_error" not in set(runs["outcome"]), runs[["sdk_version", "outcome"]]
    old = runs[runs["sdk_version"] == "2.0.0"].set_index("scenario")
    assert old.loc["malformed_then_valid", "outcome"] == "recovered"


@pytest.mark.slow
def test_a_dependency_that_conflicts_with_the_release_is_one_line(tmp_path: Path) -> None:
    project = write_project(tmp_path / "project", '"pydantic-ai-slim[openai]>=2.5"')
    done = bench(project, "run", "--agent", "refunds", "--release", "pydantic-ai==2.0.0", *SCENARIOS)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("error: agent 'refunds' with pydantic-ai==2.0.0: cannot build the environment: ")
    assert "pydantic-ai-slim[openai]>=2.5" in done.stderr and "unsatisfiable" in done.stderr


@pytest.mark.slow
def test_an_agent_no_release_is_for_is_refused(tmp_path: Path) -> None:
    """With several agents, one whose SDK no --release names is not left out in silence."""
    project = write_project(tmp_path / "project")
    (project / "refundsapp" / "other.py").write_text(
        "from agents import Agent\nfrom refundsapp.agent import Refund\n\n"
        "other = Agent(name='other', instructions='x', output_type=Refund)\n",
        encoding="utf-8",
    )
    done = bench(
        project, "run", "--agent", "refunds", "--agent", "refundsapp.other:other", "--release", "pydantic-ai@pinned",
        *SCENARIOS,
    )  # fmt: skip
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr == (
        "error: agent 'other' runs on openai-agents, which no --release names; add --release openai-agents@pinned\n"
    )
