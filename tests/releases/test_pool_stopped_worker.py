"""A release worker stopped by SIGSTOP (issue 26, point 8): its cell is a harness error that says
the worker stopped responding, not one that blames a proxy for the missing request."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from bench.provider import LocalProvider
from bench.releases.envs import Environment
from bench.releases.pool import Worker, WorkerCommand, WorkerPool
from bench.run.plan import Filters, expand
from bench.run.runner import CellRecord, Runner, RunOptions
from bench.scenarios.files import SCENARIO_DIR, load_paths
from bench.sdk import registry


@pytest.mark.slow
def test_a_sigstopped_worker_is_a_harness_error_naming_the_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    start = Worker.start.__func__  # type: ignore[attr-defined]

    async def started_then_stopped(cls: type[Worker], command: WorkerCommand, log: object) -> Worker:
        worker = await start(cls, command, log)
        os.kill(worker.process.pid, signal.SIGSTOP)  # ready, then frozen before the cell is sent
        return worker

    monkeypatch.setattr(Worker, "start", classmethod(started_then_stopped))
    adapter = registry.load("agentmaker")
    env = Environment("agentmaker", version(adapter.distribution), adapter.distribution, Path(sys.prefix))
    (scenario,) = [s for s in load_paths([SCENARIO_DIR]) if s.name == "valid"]
    filters = Filters(
        protocols=frozenset({"openai-chat"}), variants=frozenset({"default"}), modes=frozenset({"native"})
    )
    plans = expand([adapter], [scenario], filters, environment=env)[:1]
    pool = WorkerPool(WorkerCommand(env.python, registry.adapter_target("agentmaker"), tmp_path / "sdk.log"), 1)
    records: list[CellRecord] = []

    async def main() -> None:
        try:
            # The limit only ends the wait on a frozen process; the outcome cannot depend on it.
            options = RunOptions(time_limit_s=2.0)
            await Runner({"agentmaker": adapter}, options, "test", {env.name: pool}).run(
                plans, provider, records.append
            )
        finally:
            await pool.close()

    with LocalProvider() as provider:
        asyncio.run(main())
    (record,) = records
    assert record.run["outcome"] == "harness_error"
    assert record.run["exception_type"] == "WorkerStoppedResponding"
    message = record.run["exception_message"]
    assert (
        "the release worker (pid " in message and "stopped responding" in message and "stopped by a signal" in message
    )
    assert "proxy" not in message
