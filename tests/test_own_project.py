"""A user's own project, outside this repository, with an agent of each of the five SDKs
(issue 15, done criteria): ``bench run --agent`` as a separate process from the project's folder,
misfit-bench being the one installed from this checkout (the test venv's ``bench`` script)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench.results import load_run

REPO = Path(__file__).resolve().parent.parent
BENCH = Path(sys.executable).parent / "bench"

AGENTS = """
from typing import Literal

from agentmaker import Agent as MakerAgent
from agents import Agent as OpenAIAgent, RunErrorHandlerInput
from claude_agent_sdk import ClaudeAgentOptions
from langchain.agents import create_agent
from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import Agent


class Ticket(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: Literal["billing", "bug", "feature"]
    priority: int = Field(ge=1, le=5)
    summary: str


support = Agent("openai-chat:gpt-4.1", output_type=Ticket, retries=2, instructions="Triage the ticket.")

triage = OpenAIAgent(name="triage", instructions="Triage the ticket.", output_type=Ticket)


def needs_review(data: RunErrorHandlerInput) -> Ticket:
    return Ticket(label="bug", priority=5, summary="needs human review")


run_options = {"error_handlers": {"invalid_final_output": needs_review}}


def langchain_triage(model):
    return create_agent(model.langchain(), tools=[], response_format=Ticket, system_prompt="Triage the ticket.")


def agentmaker_triage(model):
    return MakerAgent("triage", model.agentmaker(), system_prompt="Triage the ticket.")


claude_triage = ClaudeAgentOptions(
    output_format={"type": "json_schema", "schema": Ticket.model_json_schema()},
    system_prompt="Triage the ticket.",
    tools=[],
)
"""

PYPROJECT = """
[project]
name = "helpdesk"
version = "0.1.0"

[[tool.bench.agents]]
name = "support"
agent = "helpdesk.agents:support"

[[tool.bench.agents]]
name = "triage"
agent = "helpdesk.agents:triage"
run_kwargs = "helpdesk.agents:run_options"

[[tool.bench.agents]]
name = "lc-triage"
agent = "helpdesk.agents:langchain_triage"

[[tool.bench.agents]]
name = "claude-triage"
agent = "helpdesk.agents:claude_triage"
prompt = "Triage: the CSV export crashes on empty reports."

[[tool.bench.agents]]
name = "maker-triage"
agent = "helpdesk.agents:agentmaker_triage"
output = "helpdesk.agents:Ticket"
protocol = "openai-chat"
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("helpdesk-project")
    assert not root.resolve().is_relative_to(REPO)
    (root / "helpdesk").mkdir()
    (root / "helpdesk" / "__init__.py").write_text("", encoding="utf-8")
    (root / "helpdesk" / "agents.py").write_text(textwrap.dedent(AGENTS), encoding="utf-8")
    (root / "pyproject.toml").write_text(textwrap.dedent(PYPROJECT), encoding="utf-8")
    return root


def bench(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The installed ``bench`` script, from the project's folder, with nothing of this repo on the path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # an edited agent module is read again, never a stale .pyc
    return subprocess.run(
        [str(BENCH), *args], cwd=project, env=env, capture_output=True, text=True, timeout=900, check=False
    )


def test_every_sdk_runs_from_a_fresh_project(project: Path) -> None:
    done = bench(project, "run", "--agent", "all", "--scenario", "valid", "--scenario", "schema_violation_then_valid")
    assert done.returncode == 0, done.stderr
    runs = load_run(project / "results" / "latest")["runs"]
    assert dict(zip(runs["agent"], runs["sdk"], strict=False)) == {
        "support": "pydantic-ai",
        "triage": "openai-agents",
        "lc-triage": "langchain",
        "claude-triage": "claude-agent-sdk",
        "maker-triage": "agentmaker",
    }
    assert not (runs["outcome"] == "harness_error").any(), runs[["agent", "scenario", "exception_message"]]
    assert set(runs.loc[runs["scenario"] == "valid", "outcome"]) == {"ok"}
    protocols = dict(zip(runs["agent"], runs["protocol"], strict=False))
    assert protocols["support"] == "openai-chat"  # the user's openai-chat: model stays on Chat Completions
    assert protocols["triage"] == "openai-responses"  # a model name: the SDK's default, Responses
    assert protocols["claude-triage"] == "anthropic-messages"


def test_removing_an_error_handler_fails_the_gate(project: Path) -> None:
    args = ("run", "--agent", "triage", "--scenario", "valid", "--scenario", "schema_violation_persistent")
    assert bench(project, *args, "--out", "baseline").returncode == 0
    assert bench(project, *args).returncode == 0
    unchanged = bench(project, "gate", "results/latest", "--baseline", "baseline/latest")
    assert unchanged.returncode == 0, unchanged.stdout

    agents = project / "helpdesk" / "agents.py"
    agents.write_text(
        agents.read_text(encoding="utf-8").replace('{"invalid_final_output": needs_review}', "{}"), encoding="utf-8"
    )
    assert bench(project, *args).returncode == 0
    weakened = bench(project, "gate", "results/latest", "--baseline", "baseline/latest")
    assert weakened.returncode == 1
    assert "triage (openai-agents)/native/own/openai-responses x schema_violation_persistent" in weakened.stdout
