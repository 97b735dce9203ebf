"""Tool faults derived from a user's own tools (issue 25, point 2): a project outside the repo
with two tools per agent, one agent of each of the five SDKs, run by the installed ``bench``.
The harness tool's scenarios are replaced by derived ones; the runs table's tool columns are
filled; a scripted raise comes from the user's (wrapped) tool and reaches the SDK; the real
tools (which raise and leave a marker) never run; agentmaker's documented gap is recorded."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from adapters.agentmaker.own import AgentmakerBinding
from bench.results.store import load_run

REPO = Path(__file__).resolve().parents[2]

SLOW_FIXTURES = ("runs",)
"""Built once for this module's tests, in seconds to minutes: their users are ``slow`` (tests/conftest.py)."""

AGENTS = """
from pathlib import Path
from typing import Literal

from agentmaker import Agent as MakerAgent, tool as maker_tool
from agents import Agent as OpenAIAgent, function_tool
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


def real(name: str) -> str:
    (HERE / "REAL_TOOL_CALLED").write_text(name)
    raise RuntimeError("the user's real tool was called")


def lookup_order(order_id: str) -> str:
    \"\"\"Look up an order by its id.\"\"\"
    return real("lookup_order")


def refund(order_id: str, amount: float) -> str:
    \"\"\"Refund part of an order.\"\"\"
    return real("refund")


TOOLS = [lookup_order, refund]

support = Agent("openai-chat:gpt-4.1", output_type=Ticket, tools=TOOLS, retries=2)
triage = OpenAIAgent(name="triage", output_type=Ticket, tools=[function_tool(t) for t in TOOLS])


def langchain_triage(model):
    return create_agent(model.langchain(), tools=TOOLS, response_format=Ticket)


def agentmaker_triage(model):
    return MakerAgent("triage", model.agentmaker(), tools=[maker_tool(t) for t in TOOLS])


@mcp_tool("lookup_order", "Look up an order by its id.", {"order_id": str})
async def lookup_order_mcp(args):
    return {"content": [{"type": "text", "text": lookup_order(args["order_id"])}]}


@mcp_tool("refund", "Refund part of an order.", {"order_id": str, "amount": float})
async def refund_mcp(args):
    return {"content": [{"type": "text", "text": refund(args["order_id"], args["amount"])}]}


claude_triage = ClaudeAgentOptions(
    output_format={"type": "json_schema", "schema": Ticket.model_json_schema()},
    tools=[],
    mcp_servers={"helpdesk": create_sdk_mcp_server("helpdesk", tools=[lookup_order_mcp, refund_mcp])},
    allowed_tools=["mcp__helpdesk__lookup_order", "mcp__helpdesk__refund"],
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
"""

PER_TOOL = ("bad_args_then_valid", "raises_then_valid", "parallel_then_valid")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    root = tmp_path_factory.mktemp("tool-faults-project")
    assert not root.resolve().is_relative_to(REPO)
    (root / "helpdesk").mkdir()
    (root / "helpdesk" / "__init__.py").write_text("", encoding="utf-8")
    (root / "helpdesk" / "agents.py").write_text(textwrap.dedent(AGENTS), encoding="utf-8")
    (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    env["PYTHONPATH"] = str(REPO)  # this checkout's bench (the venv's script may be another's)
    done = subprocess.run(
        [sys.executable, "-m", "bench.cli", "run", "--agent", "all", "--scenario", "*tool_*"],
        cwd=root, env=env, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return root, load_run(root / "results" / "latest")


@pytest.mark.slow
def test_harness_tool_scenarios_are_replaced_by_derived_ones(runs: tuple[Path, object]) -> None:
    _, run = runs
    table = run["runs"]
    assert not table["scenario"].str.startswith("tool_").any()  # no `-` rows for lookup_order
    for agent in ("support", "triage", "lc-triage", "maker-triage"):
        scenarios = set(table.loc[table["agent"] == agent, "scenario"])
        expected = {f"own_tool_{tool}_{kind}" for tool in ("lookup_order", "refund") for kind in PER_TOOL}
        assert scenarios == expected | {"own_tool_unknown_then_valid"}, agent
    claude = set(table.loc[table["agent"] == "claude-triage", "scenario"])
    assert "own_tool_mcp__helpdesk__refund_raises_then_valid" in claude and len(claude) == 7
    tools = run["manifest"]["agents"]["support"]["tools"]
    assert {name: len(scenarios) for name, scenarios in tools.items() if name != "lookup_unknown_record"} == {
        "lookup_order": 3,
        "refund": 3,
    }


def test_tool_cells_run_and_fill_the_tool_columns(runs: tuple[Path, object]) -> None:
    root, run = runs
    table = run["runs"]
    ran = table[table["agent"] != "maker-triage"]
    assert set(ran["outcome"]).isdisjoint({"unsupported", "harness_error"}), ran[["agent", "scenario", "outcome"]]
    assert ran["tool_calls_requested"].notna().all()
    assert (ran["tool_calls_requested"] >= 1).all()
    maker = table[table["agent"] == "maker-triage"]
    assert set(maker["outcome"]) == {"unsupported"}
    assert set(maker["note"]) == {AgentmakerBinding.tool_gap}
    assert not (root / "helpdesk" / "REAL_TOOL_CALLED").exists()


def test_a_scripted_raise_reaches_the_sdk_from_the_users_tool(runs: tuple[Path, object]) -> None:
    _, run = runs
    table = run["runs"]
    raised = table[table["scenario"].str.endswith("_raises_then_valid") & (table["agent"] != "maker-triage")]
    assert len(raised) == 8
    assert (raised["tool_calls"] == 1).all(), raised[["agent", "scenario", "tool_calls", "tool_errors"]]
    assert (raised["tool_errors"] == 1).all()
    # pydantic-ai and LangChain's ToolNode let a plain exception from a tool end the run: the
    # exception the user's (wrapped) tool raised, as is
    ended = raised[raised["agent"].isin(["support", "lc-triage"])]
    assert set(ended["outcome"]) == {"raised"} and len(ended) == 4
    assert set(ended["exception_type"]) == {"bench.tools.own.ScriptedToolError"}
    # openai-agents (its default failure function) and Claude hand the error to the model, which answers
    others = raised[raised["agent"].isin(["triage", "claude-triage"])]
    assert set(others["outcome"]) == {"recovered"}
    assert (others["tool_retries"] == 1).all() and (others["tool_error_to_model"]).all()


@pytest.mark.slow
def test_a_built_in_tool_scenario_asked_of_an_own_agent_is_refused(runs: tuple[Path, object]) -> None:
    """`--scenario tool_ok` names a harness-tool scenario every own agent replaces: one line,
    exit 2, naming the derived scenarios to ask for instead (never a run of nothing)."""
    root, _ = runs
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run(
        [sys.executable, "-m", "bench.cli", "run", "--agent", "support", "--scenario", "tool_ok", "--out", "refused"],
        cwd=root, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: scenario(s) tool_ok run on no chosen adapter (support)"), line
    assert "own_tool_refund_raises_then_valid" in line
    assert not (root / "refused").exists()
