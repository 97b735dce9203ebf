"""A user's agent run under ``--release`` whose module imports a package the release's environment
lacks (issue 47.2): one line naming the module, the missing package and the environment, with how
to add a package there, exit 2, as the same import error gives in-process; before, the workers
failed to start and every cell was a harness error (exit 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.upgrade.own_project import bench, write_project

BOTH = """
from agents import Agent
from pydantic import BaseModel
from pydantic_ai import Agent as PydanticAgent  # the app's other agent, on an SDK the release does not bring


class Refund(BaseModel):
    order_id: str
    amount: int


triage = Agent(name="triage", instructions="Refund the order.", output_type=Refund)
"""


@pytest.mark.slow
def test_an_import_the_release_lacks_is_the_users_one_line(tmp_path: Path) -> None:
    project = write_project(tmp_path / "project", '"openai-agents"')
    (project / "refundsapp" / "both.py").write_text(BOTH, encoding="utf-8")
    done = bench(project, "run", "--agent", "refundsapp.both:triage", "--release", "openai-agents==0.6.9",
                 "--scenario", "valid", "--no-progress", "--out", "results")  # fmt: skip
    assert done.returncode == 2, done.stderr
    # A first run builds the release's environment and says so on a line of its own; the error is one line.
    lines = [line for line in done.stderr.splitlines() if not line.startswith("warning: building the environment")]
    assert done.stdout == "" and len(lines) == 1, done.stderr
    line = lines[0]
    assert line.startswith("error: agent 'refundsapp.both:triage': importing refundsapp.both failed: "), line
    assert "No module named 'pydantic_ai'" in line and "in the environment of openai-agents==0.6.9" in line
    assert "pydantic-ai-slim" in line and "[project].dependencies of " in line, line
    assert not (project / "results").exists()
