"""Own agents of the other four SDKs under ``--release`` (issue 23.1, with
tests/upgrade/test_decision_own_release.py for Pydantic AI): one run, each agent in a release
environment of its SDK, every cell the user's agent and none a harness error. Each agent module
imports only its own SDK: a release environment holds one SDK."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from own_project import bench

from bench.results.store import latest_run, read_table

MODULES = {
    "oa": """
        from agents import Agent
        from pydantic import BaseModel

        class Ticket(BaseModel):
            label: str
            priority: int

        triage = Agent(name="tickets", instructions="Triage.", output_type=Ticket)
    """,
    "lc": """
        from langchain.agents import create_agent
        from pydantic import BaseModel

        class Ticket(BaseModel):
            label: str
            priority: int

        def triage(model):
            return create_agent(model.langchain(), response_format=Ticket, system_prompt="Triage the ticket.")
    """,
    "maker": """
        from agentmaker import Agent
        from pydantic import BaseModel

        class Ticket(BaseModel):
            label: str
            priority: int

        def triage(model):
            return Agent("triage", model.agentmaker(), system_prompt="Triage the ticket.")
    """,
    "claude": """
        from claude_agent_sdk import ClaudeAgentOptions
        from pydantic import BaseModel

        class Ticket(BaseModel):
            label: str
            priority: int

        triage = ClaudeAgentOptions(
            output_format={"type": "json_schema", "schema": Ticket.model_json_schema()},
            system_prompt="Triage the ticket.", tools=[],
        )
    """,
}
PYPROJECT = """
[project]
name = "helpdesk"
version = "0.1.0"
dependencies = []

[[tool.bench.agents]]
name = "oa"
agent = "helpdesk.oa:triage"

[[tool.bench.agents]]
name = "lc"
agent = "helpdesk.lc:triage"

[[tool.bench.agents]]
name = "maker"
agent = "helpdesk.maker:triage"
output = "helpdesk.maker:Ticket"
protocol = "openai-chat"

[[tool.bench.agents]]
name = "claude"
agent = "helpdesk.claude:triage"
"""
RELEASES = {
    "oa": "openai-agents==0.6.9", "lc": "langchain==1.0.0", "maker": "agentmaker==0.1.0",
    "claude": "claude-agent-sdk==0.2.108",
}  # fmt: skip


@pytest.mark.slow
def test_own_agents_of_four_sdks_run_in_their_releases(tmp_path: Path) -> None:
    project = tmp_path / "helpdesk-project"
    (project / "helpdesk").mkdir(parents=True)
    (project / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    (project / "helpdesk" / "__init__.py").write_text("", encoding="utf-8")
    for name, source in MODULES.items():
        (project / "helpdesk" / f"{name}.py").write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
    agents = [part for name in RELEASES for part in ("--agent", name)]
    releases = [part for spec in RELEASES.values() for part in ("--release", spec)]
    scenarios = ["--scenario", "valid", "--scenario", "malformed_then_valid"]
    done = bench(project, "run", *agents, *releases, *scenarios, "--no-progress", "--out", "results")
    assert done.returncode == 0, done.stdout + done.stderr
    runs = read_table(latest_run(project / "results"), "runs").to_pandas()
    ran = {(agent, environment) for agent, environment in zip(runs["agent"], runs["environment"], strict=True)}
    assert ran == set(RELEASES.items())
    assert len(runs) == 8 and "harness_error" not in set(runs["outcome"]), runs[["agent", "outcome"]]
    assert set(runs.loc[runs["scenario"] == "valid", "outcome"]) == {"ok"}  # the agent itself answered
