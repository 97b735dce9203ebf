"""A user's own agno ``Agent`` through ``bench run --agent`` (Typer's CliRunner), against the local
provider over loopback, in an interpreter that has agno installed as the user's would: the agno
environment's Python (adapters/agno/environment.txt) with the harness's packages after its own, so
agno and its clients are the locked ones. The binding (adapters/agno/own.py) points a
``deep_copy`` of the agent at the provider; the user's switch and retries stay theirs."""

from __future__ import annotations

import json
import subprocess
import sysconfig
from pathlib import Path

import pytest

from bench.results.store import latest_run, load_run
from tests.adapters.agno.agno_registration import agno_registered
from tests.paths import REPO
from tests.ticket_agent import TICKET_MODEL

pytestmark = [pytest.mark.serial, pytest.mark.slow]

AGENTS = """
from agno.agent import Agent
from agno.models.anthropic import Claude
from agno.models.openai import OpenAIChat

def lookup_order(order_id: str) -> dict:
    \"\"\"Look up an order by its id.

    Args:
        order_id: The order id, e.g. ORD-1042.
    \"\"\"
    return {"order_id": order_id, "status": "shipped"}

prompted = Agent(model=OpenAIChat(id="gpt-4o-mini"), output_schema=Ticket, use_json_mode=True, retries=1,
                 delay_between_retries=0)
native = Agent(model=Claude(id="claude-sonnet-4-6"), output_schema=Ticket, tools=[lookup_order])
"""

RAISES = "own_tool_lookup_order_raises_then_valid"
UNKNOWN = "own_tool_unknown_then_valid"

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


def _agno_python() -> Path:
    from adapters.agno.adapter import AgnoAdapter
    from bench.releases.envs import EnvironmentStore
    from bench.releases.prepare import package_of
    from bench.sdk.environment import lock_of

    adapter = AgnoAdapter()
    lock = lock_of(adapter)
    assert lock is not None
    return EnvironmentStore().build_locked(package_of(adapter), lock).python


def _run(project: Path, agent: str, scenarios: list[str]) -> dict[str, object]:
    out = project / "runs" / agent
    args = ["run", "--agent", f"helpdesk:{agent}", "--out", str(out), "--no-progress", "--no-cache"]
    args += [flag for scenario in scenarios for flag in ("--scenario", scenario)]
    harness = sysconfig.get_paths()["purelib"]
    with agno_registered(project / "registration"):
        import os

        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(project), env.get("PYTHONPATH", "")])
        done = subprocess.run(
            [str(_agno_python()), "-c", DRIVER.format(harness=harness, args=args)],
            cwd=project, env=env, capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    directory = latest_run(out)
    assert directory is not None, report
    report["runs"] = load_run(directory)["runs"]
    return report


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / "helpdesk.py").write_text(TICKET_MODEL + AGENTS)
    return tmp_path


def test_a_users_prompted_agent_keeps_its_switch_and_its_retries(project: Path) -> None:
    """use_json_mode=True is the prompted mode (agent/_messages.py:1186-1194); the user's
    retries=1 re-runs the turn on the 400 (agent/_run.py:1570, 1898-1908): 2 calls; a malformed
    answer is the raw string after 1 call (agent/_response.py:904-938). No thread is left."""
    report = _run(project, "prompted", ["valid", "malformed_then_valid", "http_400_persistent"])
    assert report["exit"] == 0, report["output"]
    assert report["left"] == []
    runs = report["runs"]
    assert set(runs["mode"]) == {"prompted"} and set(runs.protocol) == {"openai-chat"}
    outcome = dict(zip(runs.scenario, zip(runs.outcome, runs.model_calls, strict=True), strict=True))
    assert outcome["valid"] == ("ok", 1)
    assert outcome["malformed_then_valid"] == ("empty", 1)
    assert outcome["http_400_persistent"] == ("empty", 2)


def test_a_users_claude_agent_is_native_and_its_own_tool_is_driven(project: Path) -> None:
    """Claude with a structured-output id is native (claude.py:224-235); the user's tool gets the
    derived tool scenarios, an unknown tool fed back as a tool result (models/base.py:2068-2078)."""
    report = _run(project, "native", ["valid", RAISES, UNKNOWN])
    assert report["exit"] == 0, report["output"]
    assert report["left"] == []
    runs = report["runs"]
    assert set(runs["mode"]) == {"native"} and set(runs.protocol) == {"anthropic-messages"}
    rows = {row.scenario: row for row in runs.itertuples()}
    assert rows["valid"].outcome == "ok"
    raised = rows[RAISES]  # the user's tool, wrapped for the cell's log, raised: fed back, then valid
    assert (raised.outcome, raised.model_calls, raised.tool_calls, raised.tool_errors) == ("recovered", 2, 1, 1)
    unknown = rows[UNKNOWN]  # a tool the agent lacks: agno's "does not exist" result, never a call
    assert (unknown.outcome, unknown.model_calls, unknown.tool_calls) == ("recovered", 2, 0)
