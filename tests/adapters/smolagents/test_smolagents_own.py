"""A user's own smolagents agent under ``bench run --agent``, as a user runs it from their project:
a factory building a ``ToolCallingAgent`` on ``model.smolagents()``, its final answer a typed tool,
one tool of their own faked in by the harness's tool scenarios, and the output type named in the
entry. smolagents is registered as a release worker inherits it (``MISFIT_BENCH_REGISTRATIONS``)
where the checkout's metadata does not name it yet."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.cli import app
from bench.results.store import latest_run, load_run
from bench.sdk import registry

pytestmark = pytest.mark.slow  # one `bench run --agent` of 5 cells: about 5 s here

REGISTRATION = [
    {"name": "smolagents", "target": "adapters.smolagents:PLUGIN", "distribution": None, "extras": []},
]

PROJECT = '''
from pydantic import BaseModel, ConfigDict
from smolagents import ToolCallingAgent, tool

from adapters.smolagents.answer import final_answer_tool


class Person(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    age: int
    email: str


@tool
def lookup_person(name: str) -> str:
    """Look a person up.

    Args:
        name: Their full name.
    """
    return "Ada Lovelace, 36, ada@example.com"


def make(model):
    return ToolCallingAgent(tools=[final_answer_tool(Person), lookup_person], model=model.smolagents(), max_steps=3)
'''


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    if "smolagents" not in registry.registrations():
        monkeypatch.setenv(registry.INHERITED, json.dumps(REGISTRATION))
    (tmp_path / "people_agents.py").write_text(textwrap.dedent(PROJECT), encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(
        textwrap.dedent("""
        [project]
        name = "user-project"
        version = "0"

        [[tool.bench.agents]]
        name = "people"
        agent = "people_agents:make"
        output = "people_agents:Person"
        prompt = "Who is Ada Lovelace?"
        """),
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_a_users_factory_agent_runs_under_the_faults(project: Path) -> None:
    args = ["run", "--agent", "people", "--scenario", "valid", "--scenario", "malformed_then_valid"]
    result = CliRunner().invoke(app, [*args, "--scenario", "own_tool_*", "--out", "out"])
    assert result.exit_code == 0, result.stderr + result.stdout
    directory = latest_run(project / "out")
    assert directory is not None
    runs = load_run(directory)["runs"].set_index("scenario")
    assert set(runs.sdk) == {"smolagents"} and set(runs.agent) == {"people"}
    assert set(runs["mode"]) == {"tool"} and set(runs.protocol) == {"openai-chat"}
    assert runs.loc["valid"].outcome == "ok"
    assert runs.loc["malformed_then_valid"].outcome == "recovered" and runs.loc["malformed_then_valid"].model_calls == 2
    # The user's tool, wrapped by the harness (own.py with_fakes): the scripted raise reaches the
    # tool and is fed back as an AgentToolExecutionError (agents.py:1483-1502), then the answer.
    raised = runs.loc["own_tool_lookup_person_raises_then_valid"]
    assert raised.outcome == "recovered" and raised.tool_calls == 1 and raised.tool_errors == 1
    bad_args = runs.loc["own_tool_lookup_person_bad_args_then_valid"]
    assert bad_args.outcome == "recovered" and bad_args.tool_calls == 0  # refused before the tool runs
