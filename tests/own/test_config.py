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

from adapters.agentmaker.own import AgentmakerBinding
from bench.results.store import load_run
from tests.paths import REPO

pytestmark = pytest.mark.slow  # a fresh project with an agent of each SDK, run by the installed bench

BENCH = Path(sys.executable).parent / "bench"

AGENTS = """
from pathlib import Path
from typing import Literal

from agentmaker import Agent as MakerAgent, tool as maker_tool
from agents import Agent as OpenAIAgent, RunErrorHandlerInput, function_tool
from claude_agent_sdk import ClaudeAgentOptions, create_sdk_mcp_server, tool as mcp_tool
from langchain.agents import create_agent
from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import Agent

HERE = Path(__file__).parent


class Ticket(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: Literal["billing", "bug", "feature"]
    priority: int = Field(ge=1, le=5)
    summary: str


def lookup_order(order_id: str) -> str:
    \"\"\"Look up an order by its id.\"\"\"
    (HERE / "REAL_TOOL_CALLED").write_text(order_id)
    raise RuntimeError("the user's real tool was called")


def called(sdk: str, order_id: str) -> str:
    with (HERE / "fake_calls.txt").open("a") as calls:
        calls.write(f"{sdk} {order_id}\\n")
    return "order found: shipped"


def fake_langchain(order_id: str) -> str:
    return called("langchain", order_id)


def fake_openai_agents(order_id: str) -> str:
    return called("openai-agents", order_id)


@mcp_tool("lookup_order", "Look up an order by its id.", {"order_id": str})
async def lookup_order_mcp(args):
    return {"content": [{"type": "text", "text": lookup_order(args["order_id"])}]}


async def fake_lookup_order_mcp(args):
    return {"content": [{"type": "text", "text": called("claude", args["order_id"])}]}


support = Agent("openai-chat:gpt-4.1", output_type=Ticket, retries=2, instructions="Triage the ticket.")

triage = OpenAIAgent(
    name="triage", instructions="Triage the ticket.", output_type=Ticket, tools=[function_tool(lookup_order)]
)


def needs_review(data: RunErrorHandlerInput) -> Ticket:
    return Ticket(label="bug", priority=5, summary="needs human review")


run_options = {"error_handlers": {"invalid_final_output": needs_review}}


def langchain_triage(model):
    return create_agent(
        model.langchain(), tools=[lookup_order], response_format=Ticket, system_prompt="Triage the ticket."
    )


def agentmaker_triage(model):
    tools = [maker_tool(lookup_order)]
    return MakerAgent("triage", model.agentmaker(), system_prompt="Triage the ticket.", tools=tools)


claude_triage = ClaudeAgentOptions(
    output_format={"type": "json_schema", "schema": Ticket.model_json_schema()},
    system_prompt="Triage the ticket.",
    tools=[],
    mcp_servers={"helpdesk": create_sdk_mcp_server("helpdesk", tools=[lookup_order_mcp])},
    allowed_tools=["mcp__helpdesk__lookup_order"],
)
"""

ENTRIES: dict[str, dict[str, str]] = {
    "support": {"agent": "'helpdesk.agents:support'"},
    "triage": {
        "agent": "'helpdesk.agents:triage'",
        "run_kwargs": "'helpdesk.agents:run_options'",
        "tools": "{ lookup_order = { fake = 'helpdesk.agents:fake_openai_agents' } }",
    },
    "lc-triage": {
        "agent": "'helpdesk.agents:langchain_triage'",
        "tools": "{ lookup_order = { fake = 'helpdesk.agents:fake_langchain' } }",
    },
    "claude-triage": {
        "agent": "'helpdesk.agents:claude_triage'",
        "prompt": "'Triage: the CSV export crashes on empty reports.'",
        "tools": "{ mcp__helpdesk__lookup_order = { fake = 'helpdesk.agents:fake_lookup_order_mcp' } }",
    },
    "maker-triage": {
        "agent": "'helpdesk.agents:agentmaker_triage'",
        "output": "'helpdesk.agents:Ticket'",
        "protocol": "'openai-chat'",
        "tools": "{ lookup_order = {} }",
    },
}
"""Each agent's ``[[tool.bench.agents]]`` entry: its name and its other fields as TOML values."""

PYPROJECT = '[project]\nname = "helpdesk"\nversion = "0.1.0"\n' + "".join(
    f"\n[[tool.bench.agents]]\nname = '{name}'\n" + "".join(f"{key} = {value}\n" for key, value in fields.items())
    for name, fields in ENTRIES.items()
)


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


def test_opted_in_tools_run_their_fakes_never_the_real_tool(project: Path) -> None:
    """openai-agents, LangChain and Claude call the fake in place of the user's tool (the real one
    raises and leaves a marker); agentmaker's structured call never reaches a tool, so its cells
    say why (pydantic-ai: tests/own/test_adapter.py)."""
    agents = ("--agent", "triage", "--agent", "lc-triage", "--agent", "claude-triage", "--agent", "maker-triage")
    done = bench(project, "run", *agents, "--scenario", "own_tool_*", "--out", "tools")
    assert done.returncode == 0, done.stderr
    runs = load_run(project / "tools" / "latest")["runs"]
    outcomes = {
        (agent, scenario): outcome
        for agent, scenario, outcome in runs[["agent", "scenario", "outcome"]].values
        if scenario.endswith(("_lookup_order_then_valid", "_lookup_order_bad_args_then_valid"))
    }
    # a broken call the SDK refuses, then the answer: recovered (its retry is counted in the tool columns)
    assert outcomes == {
        ("triage", "own_tool_lookup_order_then_valid"): "ok",
        ("triage", "own_tool_lookup_order_bad_args_then_valid"): "recovered",
        ("lc-triage", "own_tool_lookup_order_then_valid"): "ok",
        ("lc-triage", "own_tool_lookup_order_bad_args_then_valid"): "recovered",
        ("claude-triage", "own_tool_mcp__helpdesk__lookup_order_then_valid"): "ok",
        ("claude-triage", "own_tool_mcp__helpdesk__lookup_order_bad_args_then_valid"): "recovered",
        ("maker-triage", "own_tool_lookup_order_then_valid"): "unsupported",
        ("maker-triage", "own_tool_lookup_order_bad_args_then_valid"): "unsupported",
    }
    assert set(runs.loc[runs["agent"] == "maker-triage", "note"]) == {AgentmakerBinding.tool_gap}
    assert not (project / "helpdesk" / "REAL_TOOL_CALLED").exists()
    calls = (project / "helpdesk" / "fake_calls.txt").read_text().splitlines()
    # one call each: the broken arguments are refused by the SDK's own validation, never reach the tool
    assert sorted(call.split()[0] for call in calls) == ["claude", "langchain", "openai-agents"]
