"""A worker process starved of CPU is slow, not stalled: the run's event loop idles while the
worker computes, so the stall limit credits the worker's own wait for a CPU
(bench.sdk.progress.note_worker), as it credits the loop's (tests/run/test_runner_under_load.py)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from bench.provider import LocalProvider
from bench.releases.envs import Environment
from bench.releases.pool import Worker, WorkerCommand, WorkerPool
from bench.run.plan import Filters, expand
from bench.run.runner import CellRecord, Runner, RunOptions
from bench.scenarios.files import SCENARIO_DIR, load_paths
from tests.releases.starved_sdk import Computing
from tests.run.test_runner_under_load import SPIN, busy_processes, pinned

STARVED_LIMIT_S = 1.0


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/schedstat").exists(), reason="the kernel counts no run-queue wait here")
def test_a_worker_starved_of_cpu_is_slow_not_stalled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cpu = min(os.sched_getaffinity(0))
    start = Worker.start.__func__  # type: ignore[attr-defined]

    async def started_then_pinned(cls: type[Worker], command: WorkerCommand, log: object) -> Worker:
        worker = await start(cls, command, log)
        os.sched_setaffinity(worker.process.pid, {cpu})  # beside four busy loops: a fifth of a core
        return worker

    monkeypatch.setattr(Worker, "start", classmethod(started_then_pinned))
    adapter = Computing()
    env = Environment("computing", "0", "pytest", Path(sys.prefix))
    (scenario,) = [s for s in load_paths([SCENARIO_DIR]) if s.name == "valid"]
    plans = expand([adapter], [scenario], Filters(), environment=env)
    assert len(plans) == 1
    pool = WorkerPool(WorkerCommand(env.python, "tests.releases.starved_sdk:Computing", tmp_path / "sdk.log"), 1)
    records: list[CellRecord] = []

    async def main() -> None:
        try:
            options = RunOptions(time_limit_s=STARVED_LIMIT_S)
            await Runner({"computing": adapter}, options, "test", {env.name: pool}).run(plans, provider, records.append)
        finally:
            await pool.close()

    with LocalProvider() as provider, busy_processes(4, pinned(SPIN, cpu)):
        asyncio.run(main())
    (record,) = records
    assert record.run["latency_ms"] > STARVED_LIMIT_S * 1000, "the busy loops did not starve the worker"
    assert record.run["outcome"] != "harness_error", record.run["exception_message"]
    assert record.run["exception_type"] is None or record.run["exception_type"] != "WorkerStoppedResponding"
