"""A release worker that floods its stderr (issue 42): the parent reads it as it comes, so the
worker never blocks on a full pipe, and keeps of it what a run's ``sdk.log`` bounds a cell to
(bench.results.sdklog), with the line that says where it was cut; the cell is the SDK's."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from bench.provider import LocalProvider
from bench.releases.envs import Environment
from bench.releases.pool import WorkerCommand, WorkerPool
from bench.results.sdklog import CELL_LIMIT, SdkLog
from bench.run.plan import Filters, expand
from bench.run.runner import CellRecord, Runner, RunOptions
from bench.scenarios.files import SCENARIO_DIR, load_paths
from tests.releases.flooding_sdk import FLOOD_BYTES, Flooding


@pytest.mark.slow  # a worker process and 8 MiB through a pipe
def test_a_worker_flooding_its_stderr_is_bounded_in_sdk_log_and_its_cell_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    adapter = Flooding()
    env = Environment("flooding", "0", "pytest", Path(sys.prefix))
    (scenario,) = [s for s in load_paths([SCENARIO_DIR]) if s.name == "valid"]
    plans = expand([adapter], [scenario], Filters(), environment=env)
    pool = WorkerPool(WorkerCommand(env.python, "tests.releases.flooding_sdk:Flooding"), 1)
    log = SdkLog(tmp_path / "sdk.log")
    monkeypatch.setattr(sys, "stderr", log)  # what a run does (bench.run.capture)
    records: list[CellRecord] = []

    async def main() -> None:
        try:
            await Runner({"flooding": adapter}, RunOptions(time_limit_s=60), "test", {env.name: pool}).run(
                plans, provider, records.append
            )
        finally:
            await pool.close()

    with LocalProvider() as provider:
        asyncio.run(main())
    monkeypatch.undo()
    log.close()
    (record,) = records
    assert record.run["outcome"] not in ("harness_error", "timeout"), record.run["exception_message"]
    written = (tmp_path / "sdk.log").read_text(encoding="utf-8")
    assert len(written) < CELL_LIMIT + 4096 < FLOOD_BYTES, len(written)
    assert f"[misfit-bench: sdk.log cut here for cell {plans[0].cell_id}: it wrote more than" in written
