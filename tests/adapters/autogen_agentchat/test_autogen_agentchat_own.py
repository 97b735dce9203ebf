"""A user's own AutoGen ``AssistantAgent`` through ``bench run --agent`` (Typer's CliRunner), against
the local provider over loopback, in an interpreter that has autogen installed as the user's would:
the autogen environment's Python (adapters/autogen_agentchat/environment.txt) with the harness's
packages after its own. The user's factory builds the agent on ``model.autogen()`` per cell
(adapters/autogen_agentchat/own.py); its settings stay theirs. One CLI run, three scenarios."""

from __future__ import annotations

import json
import os
import subprocess
import sysconfig
from typing import Any

import pytest

from adapters.autogen_agentchat.adapter import AutogenAdapter
from bench.releases.envs import EnvironmentStore
from bench.releases.prepare import package_of
from bench.results.store import latest_run, load_run
from bench.sdk.environment import lock_of
from tests.paths import REPO
from tests.ticket_agent import TICKET_MODEL

pytestmark = pytest.mark.serial  # builds (or reuses) the environment; one CLI run in its interpreter

SLOW_FIXTURES = ("triaged",)

AGENTS = """
from autogen_agentchat.agents import AssistantAgent

def triage(model):
    return AssistantAgent("triage", model_client=model.autogen(), output_content_type=Ticket)
"""

DRIVER = """
import json, sys, threading
sys.path.append({harness!r})
from typer.testing import CliRunner
from bench.cli import app
before = {{t.ident for t in threading.enumerate()}}
result = CliRunner().invoke(app, {args!r})
left = [t.name for t in threading.enumerate() if t.ident not in before and t.is_alive()]
print(json.dumps({{"exit": result.exit_code, "output": result.output, "left": left}}))
"""


@pytest.fixture(scope="module")
def triaged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``bench run --agent helpdesk:triage`` on valid, malformed_then_valid and http_429_then_valid."""
    project = tmp_path_factory.mktemp("autogen-own")
    (project / "helpdesk.py").write_text(TICKET_MODEL + AGENTS)
    adapter = AutogenAdapter()
    lock = lock_of(adapter)
    assert lock is not None
    python = EnvironmentStore().build_locked(package_of(adapter), lock).python
    out = project / "runs"
    args = ["run", "--agent", "helpdesk:triage", "--out", str(out), "--no-progress", "--no-cache"]
    args += [f for s in ("valid", "malformed_then_valid", "http_429_then_valid") for f in ("--scenario", s)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(project), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [str(python), "-c", DRIVER.format(harness=sysconfig.get_paths()["purelib"], args=args)],
        cwd=project, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    directory = latest_run(out)
    assert directory is not None, report
    report["runs"] = load_run(directory)["runs"]
    return report


def test_a_users_factory_agent_runs_native_on_chat_and_leaves_no_thread(triaged: dict[str, Any]) -> None:
    assert triaged["exit"] == 0, triaged["output"]
    assert triaged["left"] == []
    runs = triaged["runs"]
    assert set(runs["mode"]) == {"native"} and set(runs.protocol) == {"openai-chat"}
    assert set(runs.sdk) == {"autogen-agentchat"}


def test_the_users_agent_fails_and_retries_as_the_built_in_cells(triaged: dict[str, Any]) -> None:
    """parse raises ValidationError on malformed JSON after 1 call, never re-asked (research.md);
    the client's max_retries=2 recovers a 429 on the 2nd call."""
    runs = triaged["runs"]
    outcome = {row.scenario: (row.outcome, row.model_calls) for row in runs.itertuples()}
    assert outcome == {
        "valid": ("ok", 1),
        "malformed_then_valid": ("raised", 1),
        "http_429_then_valid": ("recovered", 2),
    }
    raised = runs[runs.scenario == "malformed_then_valid"]
    assert set(raised.exception_type) == {"pydantic_core._pydantic_core.ValidationError"}
