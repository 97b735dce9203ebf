"""A release worker whose SDK ends the process mid-cell (issue 42): that cell is a harness error
naming the exit code, the worker's last words are in sdk.log under that cell, and the pool starts
another worker for the next cell, which runs."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from bench.provider import LocalProvider
from bench.releases.envs import Environment
from bench.releases.pool import WorkerCommand, WorkerPool
from bench.results.sdklog import SdkLog
from bench.run.plan import Filters, expand
from bench.run.runner import CellRecord, Runner, RunOptions
from bench.scenarios.files import SCENARIO_DIR, load_paths
from tests.releases.exiting_sdk import EXIT_CODE, HOW, MARKER, Exiting


@pytest.mark.slow  # two worker processes
@pytest.mark.parametrize(("how", "said"), [("code", f"code {EXIT_CODE}"), ("signal", "killed by SIGKILL")])
def test_a_worker_that_exits_mid_cell_fails_that_cell_only(
    how: str, said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    adapter = Exiting()
    env = Environment("exiting", "0", "pytest", Path(sys.prefix))
    (scenario,) = [s for s in load_paths([SCENARIO_DIR]) if s.name == "valid"]
    plans = expand([adapter], [scenario], Filters(), environment=env, reps=2)
    assert len(plans) == 2, plans
    monkeypatch.setenv(MARKER, str(tmp_path / "exited"))
    monkeypatch.setenv(HOW, how)
    pool = WorkerPool(WorkerCommand(env.python, "tests.releases.exiting_sdk:Exiting"), 1)
    log = SdkLog(tmp_path / "sdk.log")
    monkeypatch.setattr(sys, "stderr", log)  # what a run does (bench.run.capture)
    records: list[CellRecord] = []

    async def main() -> None:
        try:
            await Runner({"exiting": adapter}, RunOptions(time_limit_s=60), "test", {env.name: pool}).run(
                plans, provider, records.append
            )
        finally:
            await pool.close()

    with LocalProvider() as provider:
        asyncio.run(main())
    monkeypatch.undo()
    log.close()
    assert len(records) == 2
    crashed, answered = sorted(records, key=lambda record: record.run["outcome"] != "harness_error")
    assert crashed.run["outcome"] == "harness_error" and crashed.run["model_calls"] == 1
    assert f"worker exited ({said}) without answering" in crashed.run["exception_message"]
    assert answered.run["outcome"] not in ("harness_error", "timeout"), answered.run["exception_message"]
    assert answered.run["model_calls"] == 1
    assert "exiting: a native library gave up" in (tmp_path / "sdk.log").read_text(encoding="utf-8")
