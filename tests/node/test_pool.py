"""The Node workers' supervision (bench.node.pool): a worker that dies, hangs, prints garbage or
is killed mid-cell is that cell's harness error and a fresh worker for the next cell, and no
Node process outlives the run. Driven with tests/node/drivers/misbehaving.mjs (whose behaviour
the cell's variant picks) and with the real AI SDK driver against the provider over loopback."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from typing import Any, ClassVar

import psutil
import pytest

from adapters.ai.adapter import AiAdapter
from bench.core.vocabulary import Mode, ModeSupport, Protocol
from bench.node import setup
from bench.node.adapter import NodeAdapter
from bench.node.pool import NodeWorkerPool
from bench.provider import LocalProvider
from bench.releases.pool import WorkerError
from bench.results.sdklog import CURRENT_CELL
from bench.run.classify import Driven
from bench.run.plan import Filters, expand
from bench.run.runner import CellRecord, Runner, RunOptions, drive
from bench.scenarios.behaviours import Script
from bench.scenarios.files import SCENARIO_DIR, load_paths
from bench.scenarios.tasks import get_task
from bench.sdk import clients
from bench.sdk.adapter import Cell, Support, SupportTable, grid

pytestmark = pytest.mark.skipif(setup.unavailable() is not None, reason=str(setup.unavailable()))

BEHAVIOURS = ("ok", "garbage", "die", "hang", "throw", "big")


class Misbehaving(NodeAdapter):
    name: ClassVar[str] = "node-misbehaving"
    distribution: ClassVar[str] = "node-misbehaving"
    npm_package: ClassVar[str] = "zod"
    driver: ClassVar[str] = "tests/node/drivers/misbehaving.mjs"
    support: ClassVar[SupportTable] = grid(
        (Mode.NATIVE,), (Protocol.CHAT,), BEHAVIOURS, lambda m, p, v: Support.builtin(f"the driver's {v}")
    )
    max_concurrency: ClassVar[int] = 1


MISBEHAVING = Misbehaving()


def cell(adapter: NodeAdapter, variant: str, protocol: Protocol = Protocol.CHAT) -> Cell:
    return next(c for c in adapter.cells() if c.variant == variant and c.protocol is protocol)


async def run(provider: LocalProvider, adapter: NodeAdapter, target: Cell, script: list[Any], limit: float) -> Driven:
    task = get_task("person")
    with provider.open_run(task, Script.parse(script, then="repeat")) as handle:
        return await drive(adapter, target, task, handle, limit)


def pool_of(adapter: NodeAdapter) -> NodeWorkerPool:
    pool = clients.shared(("node", adapter.driver), lambda: None)
    assert isinstance(pool, NodeWorkerPool)
    return pool


def pids(pool: NodeWorkerPool) -> list[int]:
    return pool.worker_pids()


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.mark.slow
@pytest.mark.parametrize("behaviour", ["garbage", "die", "hang", "throw"])
def test_a_misbehaving_worker_is_the_cells_harness_error_and_the_next_cell_gets_a_working_one(
    provider: LocalProvider, behaviour: str
) -> None:
    seen: list[int] = []

    async def main() -> tuple[Driven, Driven, int]:
        async with clients.sharing():
            bad = await run(provider, MISBEHAVING, cell(MISBEHAVING, behaviour), ["valid"], 2.0)
            good = await run(provider, MISBEHAVING, cell(MISBEHAVING, "ok"), ["valid"], 30.0)
            pool = pool_of(MISBEHAVING)
            seen.extend(pids(pool))
            return bad, good, pool.started

    bad, good, started = asyncio.run(main())
    if behaviour == "hang":  # stopped at the stall limit; no model call, so decide() makes it a harness error
        assert bad.stopped is not None and bad.result is None
    else:
        assert isinstance(bad.harness_error, WorkerError), bad
    assert good.result is not None and good.result.exception is None
    assert good.result.output["pid"] in seen
    assert started == (1 if behaviour == "throw" else 2)  # an error escaping the driver leaves the worker fine
    assert all(gone(pid) for pid in seen)


@pytest.mark.slow
def test_a_worker_killed_mid_cell_is_a_harness_error_then_a_fresh_worker_and_none_outlives_the_run(
    provider: LocalProvider,
) -> None:
    adapter = AiAdapter()
    target = cell(adapter, "default")
    seen: list[int] = []

    async def main() -> tuple[Driven, Driven, int]:
        task = get_task("person")
        async with clients.sharing():
            with provider.open_run(task, Script.parse([{"slow": {"delay_s": 20}}], then="repeat")) as handle:
                call = asyncio.ensure_future(drive(adapter, target, task, handle, 30.0))
                while handle.state.calls_started < 1:  # the SDK's request is at the provider: mid-cell
                    await asyncio.sleep(0.02)
                (pid,) = pids(pool_of(adapter))
                os.kill(pid, signal.SIGKILL)
                killed = await call
            after = await run(provider, adapter, target, ["valid"], 30.0)
            pool = pool_of(adapter)
            seen.extend(pids(pool))
            return killed, after, pool.started

    killed, after, started = asyncio.run(main())
    assert isinstance(killed.harness_error, WorkerError) and "exited (killed by SIGKILL)" in str(killed.harness_error)
    assert after.result is not None and after.result.exception is None
    assert get_task("person").judge(after.result.output) == (True, True)
    assert started == 2
    assert len(seen) == 2 and all(gone(pid) for pid in seen)


def test_where_node_is_missing_every_cell_is_unsupported_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    reason = setup.unavailable()
    assert reason is not None and reason.startswith("Node is not installed") and "\n" not in reason
    cells = AiAdapter().cells()
    assert cells and all(c.mode_support is ModeSupport.UNSUPPORTED for c in cells)
    runnable = [c for c in cells if c.note.startswith("unsupported here: ")]
    assert len(runnable) == 16 and all(c.note == f"unsupported here: {reason}" for c in runnable)


def test_where_the_locked_packages_are_missing_the_reason_names_them_and_the_install(tmp_path: Any) -> None:
    (tmp_path / "package-lock.json").write_text((setup.NODE_ROOT / "package-lock.json").read_text())
    reason = setup.unavailable(tmp_path)
    assert reason is not None and "ai==7." in reason and setup.INSTALL_HINT in reason
    assert setup.unavailable() is None  # the checkout's own node_modules match its lock


@pytest.mark.slow
def test_a_worker_that_hangs_before_any_model_call_is_a_harness_error_naming_the_node_worker(
    provider: LocalProvider,
) -> None:
    (scenario,) = [s for s in load_paths([SCENARIO_DIR]) if s.name == "valid"]
    filters = Filters(variants=frozenset({"hang", "ok"}))
    plans = sorted(expand([MISBEHAVING], [scenario], filters), key=lambda p: p.cell.variant != "hang")
    records: list[CellRecord] = []
    # The limit only ends the wait on a hung worker; the outcome cannot depend on it.
    runner = Runner({MISBEHAVING.name: MISBEHAVING}, RunOptions(time_limit_s=2.0), "test")
    asyncio.run(runner.run(plans, provider, records.append))
    rows = {r.run["variant"]: r.run for r in records}
    hung = rows["hang"]
    assert (hung["outcome"], hung["exception_type"]) == ("harness_error", "WorkerStoppedResponding")
    assert hung["exception_message"].startswith("the Node worker (pid ") and "proxy" not in hung["exception_message"]
    assert rows["ok"]["exception_type"] != "WorkerStoppedResponding"  # read once, for its own cell


PARENT = """
import asyncio, sys
from adapters.ai.adapter import AiAdapter
from bench.node.pool import NodeWorkerPool

async def main():
    pool = NodeWorkerPool(AiAdapter().command(), 1)
    async with pool.lease():
        print(pool.worker_pids()[0], flush=True)
        await asyncio.sleep(600)

asyncio.run(main())
"""


@pytest.mark.slow
def test_a_worker_whose_parent_is_killed_exits_on_its_own() -> None:
    """The worker runs in its own session (a kill of the parent's group does not reach it), so
    it must end when its stdin closes: the parent's death closes it."""
    with subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True) as parent:
        assert parent.stdout is not None
        pid = int(parent.stdout.readline())
        assert not gone(pid)
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 30
        while not gone(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gone(pid)


@pytest.mark.slow
def test_an_answer_far_past_the_pipe_buffer_arrives_whole(provider: LocalProvider) -> None:
    async def main() -> Driven:
        async with clients.sharing():
            first = asyncio.ensure_future(run(provider, MISBEHAVING, cell(MISBEHAVING, "big"), ["valid"], 30.0))
            time.sleep(0.5)  # the parent does not read for a while: the worker's writes meet a full pipe
            return await first

    driven = asyncio.run(main())
    assert driven.result is not None and len(driven.result.output["text"]) == 4 << 20


class _Recorder:
    """Stands in for a run's sdk.log: each write with the cell it is counted against."""

    def __init__(self) -> None:
        self.lines: list[tuple[str | None, str]] = []

    def write(self, text: str) -> int:
        self.lines.append((CURRENT_CELL.get(), text))
        return len(text)

    def flush(self) -> None:
        pass


@pytest.mark.slow
def test_what_a_worker_prints_counts_against_the_cell_it_is_running(
    provider: LocalProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = _Recorder()
    monkeypatch.setattr(sys, "stderr", recorder)

    async def cell_run(name: str) -> None:
        token = CURRENT_CELL.set(name)
        try:
            await run(provider, MISBEHAVING, cell(MISBEHAVING, "ok"), ["valid"], 30.0)
        finally:
            CURRENT_CELL.reset(token)
        while not any(name == owner and "printed by the SDK" in text for owner, text in recorder.lines):
            await asyncio.sleep(0.01)  # its line is forwarded (the test times out otherwise)

    async def main() -> None:
        async with clients.sharing():
            await asyncio.wait_for(cell_run("cell-0"), 30)  # starts the worker (and its forwarder)
            await asyncio.wait_for(cell_run("cell-a"), 30)

    asyncio.run(main())
    printed = [owner for owner, text in recorder.lines if "printed by the SDK" in text]
    assert printed == ["cell-0", "cell-a"]
