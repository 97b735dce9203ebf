"""AutoGen's own environment, seen from inside its worker: a cell leaves no thread, task or event
loop behind, a cancelled one included, and nothing leaves loopback (adapters/autogen_agentchat/
research.md, "Threads, loops and cancellation").

``worker_probe.py`` runs in that environment's interpreter (autogen cannot be imported here)
against runs this test opens on the session's provider: one subprocess, five cells."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from adapters.autogen_agentchat.adapter import AutogenAdapter
from bench.provider import LocalProvider
from bench.releases.envs import EnvironmentStore
from bench.releases.prepare import package_of
from bench.scenarios.files import default_scenarios
from bench.sdk.environment import lock_of
from tests.paths import REPO

pytestmark = pytest.mark.serial  # builds (or reuses) the environment and counts its threads

SLOW_FIXTURES = ("probed",)
PLAN = [
    (("native", "openai-chat", "default"), "valid"),
    (("native", "openai-chat", "stream"), "valid"),
    (("native", "openai-chat", "default"), "tool_ok"),
    (("native", "openai-chat", "hardened"), "tool_parallel_ok"),
]


@pytest.fixture(scope="module")
def probed(provider: LocalProvider) -> dict[str, object]:
    adapter = AutogenAdapter()
    lock = lock_of(adapter)
    assert lock is not None
    python = EnvironmentStore().build_locked(package_of(adapter), lock).python
    scenarios = {scenario.name: scenario for scenario in default_scenarios()}
    handles, plan = [], []
    for key, name in PLAN:
        scenario = scenarios[name]
        task = adapter.task_for(scenario).with_tool(scenario.tool)
        handle = provider.open_run(task, scenario.build_script()).__enter__()
        handles.append(handle)
        plan.append([list(key), scenario.task, task.tool is not None, handle.endpoint.root])
    stalled = provider.open_script("person", [{"slow": 30}]).endpoint.root
    try:
        done = subprocess.run(
            [str(python), str(REPO / "tests/adapters/autogen_agentchat/worker_probe.py"), stalled, json.dumps(plan)],
            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300, check=False,
        )  # fmt: skip
    finally:
        for handle in handles:
            handle.__exit__(None, None, None)
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_every_cell_returned_its_object(probed: dict[str, object]) -> None:
    assert probed["outputs"] == [True, True, True, True]


def test_a_cell_leaves_no_thread_task_or_loop_behind(probed: dict[str, object]) -> None:
    """run/run_stream are coroutines on the caller's loop and the tool is awaited there: after the
    cells and the cancelled one, no thread they started, no pending task, and once the loop is
    closed no thread at all (no second loop was ever started in a thread of its own)."""
    assert probed["threads"] == [] and probed["tasks"] == [] and probed["after_loop"] == []


def test_every_connection_the_worker_opened_was_to_loopback(probed: dict[str, object]) -> None:
    connected = probed["connected"]
    assert isinstance(connected, list) and connected
    assert set(connected) <= {"127.0.0.1", "::1", "localhost"}, connected
