"""``bench upgrade`` ties every regression to the user's handler it escapes (issues 45.1, 46.2):
an openai-agents agent behind ``except MaxTurnsExceeded``, from 0.14.8 (its release environment)
to the pinned release, where refusals raise ModelRefusalError. Both refusal scenarios pass the
handler now: ``refusal_persistent`` (raised MaxTurnsExceeded before, which it caught) and
``refusal_then_valid`` (recovered before, needing no handler); the handler is named once, with
file:line, and both listed under it. Run from a project outside the repository."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from own_project import bench

PYPROJECT = """
[project]
name = "helpdesk"
version = "0.1.0"
dependencies = []

[[tool.bench.agents]]
name = "triage"
agent = "helpdesk.agent:triage"
"""
AGENT = """
from agents import Agent, MaxTurnsExceeded, Runner
from pydantic import BaseModel


class Ticket(BaseModel):
    label: str
    priority: int


triage = Agent(name="tickets", instructions="Triage.", output_type=Ticket)


def handle(text: str) -> Ticket | None:
    try:
        return Runner.run_sync(triage, text, max_turns=3).final_output
    except MaxTurnsExceeded:
        return None
"""
HANDLER = "helpdesk/agent.py:16"


@pytest.mark.slow
def test_every_cell_that_escapes_a_handler_is_listed_under_it_once(tmp_path: Path) -> None:
    project = tmp_path / "helpdesk-project"
    (project / "helpdesk").mkdir(parents=True)
    (project / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    (project / "helpdesk" / "__init__.py").write_text("", encoding="utf-8")
    (project / "helpdesk" / "agent.py").write_text(textwrap.dedent(AGENT).lstrip(), encoding="utf-8")
    assert (project / "helpdesk" / "agent.py").read_text().splitlines()[15].strip() == "except MaxTurnsExceeded:"
    done = bench(
        project, "upgrade", "--agent", "triage", "--from", "openai-agents==0.14.8", "--to", "openai-agents@pinned",
        "--junit", "upgrade.xml",
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    said = " ".join(done.stdout.split())
    assert said.count(HANDLER) == 1 and said.count("except MaxTurnsExceeded") == 1, done.stdout
    line = said.split(f"{HANDLER} except MaxTurnsExceeded no longer catches ModelRefusalError (", 1)[1]
    line = line.split(" changes per behaviour:", 1)[0]
    assert "ModelRefusalError is not a subclass of MaxTurnsExceeded; checked on agents " in line, line
    assert "refusal_persistent (1 cell; raises MaxTurnsExceeded (10 calls) before)" in line, line
    assert "refusal_then_valid (1 cell; recovered (2 calls) before)" in line, line
    assert "1 of your handlers no longer catch what the release raises" in said.split(" handler compatibility:")[0]
    junit = (project / "upgrade.xml").read_text(encoding="utf-8")
    assert f'name="{HANDLER}"><failure' in junit, junit
