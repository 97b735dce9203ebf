"""Strands Agents through ``bench run``'s own path: its cells run in the worker of its own
environment (adapters/strands_agents/environment.txt), against the local provider over loopback.

The expectations are read from strands-agents 1.62.0's source (adapters/strands_agents/research.md;
paths under the environment's site-packages/strands): the agent's structured-output option is a
tool whose ValidationError goes back to the model as an error tool result, with no budget of its
own (tools/structured_output/structured_output_tool.py:124-146), so a persistent violation runs to
the provider's call cap; ``Agent.structured_output_async`` is one provider call that raises
whatever the parse raised (models/openai.py:843-900, anthropic.py:1182-1230)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from bench.provider import LocalProvider
from bench.results.store import latest_run, load_run
from bench.run.plan import Filters
from bench.run.suite import SuiteRequest, run_suite
from bench.scenarios.files import default_scenarios
from bench.sdk import registry

pytestmark = pytest.mark.serial  # builds (or reuses) the environment, starts its workers

REPO = Path(__file__).resolve().parents[3]
SCENARIOS = frozenset(
    {
        "valid",
        "malformed_then_valid",
        "wrong_then_valid",
        "schema_violation_persistent",
        "tool_ok",
        "tool_bad_args_then_ok",
    }
)
SLOW_FIXTURES = ("strands_runs",)
VALIDATION = "pydantic_core._pydantic_core.ValidationError"


@pytest.fixture(scope="module", autouse=True)
def registered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The ``strands-agents`` entry point, as pyproject.toml declares it, for a venv installed
    before it existed: a distribution folder on sys.path and PYTHONPATH (as tests/plugin does)."""
    if "strands-agents" in registry.registrations():
        yield
        return
    folder = tmp_path_factory.mktemp("strands-entry-point")
    info = folder / "misfit_bench_strands_entry_point-0.0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: misfit-bench-strands-entry-point\nVersion: 0.0.0\n")
    (info / "entry_points.txt").write_text("[misfit_bench.adapters]\nstrands-agents = adapters.strands_agents:PLUGIN\n")
    saved = os.environ.get("PYTHONPATH")
    sys.path.insert(0, str(folder))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(folder), saved]))
    try:
        yield
    finally:
        sys.path.remove(str(folder))
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


@pytest.fixture(scope="module")
def strands_runs(tmp_path_factory: pytest.TempPathFactory, registered: None) -> pd.DataFrame:
    root = tmp_path_factory.mktemp("strands")
    run_suite(SuiteRequest(sdks=("strands-agents",), filters=Filters(scenarios=SCENARIOS), results_root=root))
    directory = latest_run(root)
    assert directory is not None
    loaded = load_run(directory)
    runs = loaded["runs"]
    ran = runs[runs.outcome != "unsupported"].copy()
    ran.attrs["manifest"] = loaded["manifest"]
    ran.attrs["unsupported"] = runs[runs.outcome == "unsupported"]
    return ran


def _cells(runs: pd.DataFrame, scenario: str, **where: str) -> pd.DataFrame:
    rows = runs[runs.scenario == scenario]
    for column, value in where.items():
        rows = rows[rows[column] == value]
    assert not rows.empty, (scenario, where)
    return rows


def _loop(runs: pd.DataFrame) -> pd.DataFrame:
    return runs[runs.variant != "structured_output"]


def test_the_cells_ran_in_strands_own_environment(strands_runs: pd.DataFrame) -> None:
    assert set(strands_runs.sdk_version) == {"1.62.0"}
    assert set(strands_runs.environment) == {"strands-agents==1.62.0"}
    assert "strands" not in sys.modules  # the parent planned the cells without the SDK
    valid = _cells(strands_runs, "valid")
    assert set(valid.outcome) == {"ok"} and len(valid) == 12  # 9 agent-loop cells, 3 structured_output
    unsupported = strands_runs.attrs["unsupported"]
    assert set(unsupported[unsupported.scenario == "valid"]["mode"]) == {"native", "prompted"}


def test_the_agent_loop_feeds_a_validation_error_back_with_no_budget_of_its_own(strands_runs: pd.DataFrame) -> None:
    """One re-ask recovers on the OpenAI protocols; a persistent violation is re-asked until the
    provider's call cap stops it (runaway), since the tool's error result has no limit."""
    loop = _loop(strands_runs)
    openai = loop[loop.protocol != "anthropic-messages"]
    recovered = _cells(openai, "malformed_then_valid")
    assert set(recovered.outcome) == {"recovered"} and set(recovered.model_calls) == {2}
    persistent = _cells(loop, "schema_violation_persistent")
    assert set(persistent.outcome) == {"runaway"} and set(persistent.model_calls) == {12}


def test_anthropic_malformed_tool_json_is_the_anthropic_streams_value_error(strands_runs: pd.DataFrame) -> None:
    """anthropic's stream accumulator raises ValueError on tool JSON it cannot parse
    (anthropic/lib/streaming/_messages.py:492); strands lets it through, after 1 call."""
    rows = _cells(strands_runs, "malformed_then_valid", protocol="anthropic-messages")
    assert set(rows.exception_type) == {"builtins.ValueError"} and set(rows.model_calls) == {1}
    assert rows.exception_message.str.contains("Unable to parse tool parameter JSON").all()


def test_a_wrong_answer_is_returned_unless_the_hardened_validator_rejects_it(strands_runs: pd.DataFrame) -> None:
    default = _cells(strands_runs, "wrong_then_valid", variant="default")
    assert set(default.outcome) == {"wrong"} and set(default.model_calls) == {1}
    hardened = _cells(strands_runs, "wrong_then_valid", variant="hardened")
    assert set(hardened.outcome) == {"recovered"} and set(hardened.model_calls) == {2}


def test_structured_output_is_one_call_that_raises_what_the_parse_raised(strands_runs: pd.DataFrame) -> None:
    method = strands_runs[strands_runs.variant == "structured_output"]
    assert set(method[method.scenario != "valid"].model_calls) == {1}
    assert set(_cells(method, "schema_violation_persistent").exception_type) == {VALIDATION}
    assert set(_cells(method, "valid")["mode"]) == {"native", "tool"}  # parse on OpenAI, a tool on Anthropic


def test_the_harness_tool_runs_in_the_agent_loop(strands_runs: pd.DataFrame) -> None:
    ok = _cells(strands_runs, "tool_ok")
    assert set(ok.outcome) == {"ok"} and set(ok.tool_calls) == {1}
    bad = _cells(strands_runs, "tool_bad_args_then_ok")
    assert set(bad.outcome) == {"recovered"}
    unsupported = strands_runs.attrs["unsupported"]
    method = unsupported[(unsupported.scenario == "tool_ok") & (unsupported.variant == "structured_output")]
    assert len(method) == 3 and method.note.str.contains("never offered").all()


LEAK_PROBE = """
import asyncio, json, sys, threading
from adapters.strands_agents.adapter import StrandsAdapter
from adapters.strands_agents.calls import run
from bench.scenarios.tasks import get_task
from bench.sdk.adapter import Endpoint
from bench.tools import ToolPlan

async def main():
    cells = {(c.mode, c.protocol, c.variant): c for c in StrandsAdapter().cells()}
    before = {thread.ident for thread in threading.enumerate()}
    outputs = []
    for key, task_name, tool, root in json.loads(sys.argv[1]):
        cell = cells[tuple(key)]
        task = get_task(task_name).with_tool(ToolPlan() if tool else None)
        result = await run(cell, task, Endpoint(root=root), cell.variant == "structured_output")
        outputs.append(result.exception is None and result.output is not None)
    await asyncio.sleep(0.05)
    # the loop's own default executor (``asyncio_N``: getaddrinfo and the like) is the caller's loop's
    left = [t.name for t in threading.enumerate() if t.ident not in before and not t.name.startswith("asyncio_")]
    pending = [repr(t) for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    return {"outputs": outputs, "threads": left, "tasks": pending}

report = asyncio.run(main())
report["after_loop"] = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
print(json.dumps(report))
"""


def test_a_cell_leaves_no_thread_or_task_behind(provider: LocalProvider) -> None:
    """Each call in the worker's own loop, a tool cell and the structured_output method included:
    after them, no thread the cells started but the loop's own executor, no task still pending on
    the loop, and once the loop is closed no thread at all (the sync ``Agent.__call__``'s
    ThreadPoolExecutor is never used: calls.py)."""
    from adapters.strands_agents.adapter import StrandsAdapter
    from bench.releases.envs import EnvironmentStore
    from bench.releases.prepare import package_of
    from bench.sdk.environment import lock_of

    adapter = StrandsAdapter()
    lock = lock_of(adapter)
    assert lock is not None
    python = EnvironmentStore().build_locked(package_of(adapter), lock).python
    scenarios = {scenario.name: scenario for scenario in default_scenarios()}
    plan = [
        (("tool", "openai-chat", "default"), "valid"),
        (("tool", "anthropic-messages", "stream"), "valid"),
        (("native", "openai-chat", "structured_output"), "valid"),
        (("tool", "openai-chat", "default"), "tool_ok"),
    ]
    handles, requests = [], []
    for key, name in plan:
        scenario = scenarios[name]
        task = adapter.task_for(scenario).with_tool(scenario.tool)
        handle = provider.open_run(task, scenario.build_script())
        handles.append(handle.__enter__())
        requests.append([list(key), scenario.task, task.tool is not None, handle.endpoint.root])
    try:
        probe = subprocess.run(
            [str(python), "-c", LEAK_PROBE, json.dumps(requests)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
    finally:
        for handle in handles:
            handle.__exit__(None, None, None)
    assert probe.returncode == 0, probe.stderr[-2000:]
    report = json.loads(probe.stdout.strip().splitlines()[-1])
    assert report == {"outputs": [True, True, True, True], "threads": [], "tasks": [], "after_loop": []}


def test_a_hung_cell_is_ended_at_its_time_limit(tmp_path: Path) -> None:
    """An answer that stops half-way for an hour, on the streamed agent loop and on the parse call:
    the cell's limit (``time_limit_s`` = 20 s) ends each in its worker, and the run goes on."""
    from adapters.strands_agents.adapter import StrandsAdapter

    filters = Filters(
        scenarios=frozenset({"stall_mid_stream"}),
        protocols=frozenset({"openai-chat"}),
        variants=frozenset({"default", "structured_output"}),
    )
    run_suite(SuiteRequest(sdks=("strands-agents",), filters=filters, results_root=tmp_path, suite="full"))
    directory = latest_run(tmp_path)
    assert directory is not None
    runs = load_run(directory)["runs"]
    ran = runs[runs.outcome != "unsupported"]
    assert len(ran) == 2 and set(ran.outcome) == {"timeout"}
    assert set(ran.time_limit_s) == {StrandsAdapter.time_limit_s}
