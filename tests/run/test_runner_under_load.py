"""Outcomes do not depend on machine load (issue 26): real cells of the default matrix, run with
two CPU-bound busy processes per core beside them, land where the golden matrix says.

The cells are the one a loaded machine turned from ``runaway`` after 12 calls into ``timeout``
after 9 (LangChain's tool strategy, streamed, on Anthropic Messages, against fenced prose every
attempt) and the same scenario on the Claude CLI (a process of its own, the slowest to start)
and on Pydantic AI. They run at their default limits, as the golden matrix was made: a cell's
time limit is a stall limit (bench.run.runner.drive), so a cell that keeps calling reaches the
same end however slowly; a wall-clock limit on the whole cell did not.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import ClassVar

import pytest

from bench.core.vocabulary import Mode, Protocol, Variant
from bench.provider import LocalProvider
from bench.results import golden
from bench.results.store import load_run
from bench.run.plan import Filters
from bench.run.runner import RunOptions, drive
from bench.run.suite import SuiteRequest, run_suite
from bench.scenarios.behaviours import Script
from bench.scenarios.tasks import Task, get_task
from bench.sdk.adapter import Adapter, AdapterResult, Cell, Endpoint, Support, SupportTable

SCENARIO = "malformed_fenced_prose_persistent"
SDKS = ("langchain", "claude-agent-sdk", "pydantic-ai")
CELLS = Filters(
    modes=frozenset({"tool"}),
    variants=frozenset({"stream"}),
    protocols=frozenset({"anthropic-messages"}),
    scenarios=frozenset({SCENARIO}),
)
BUSY_PER_CORE = 2
TIME_LIMIT_S: float | None = None
"""The adapters' own limits (30 s, 60 s for the Claude CLI), as the golden matrix was made."""


SPIN = "import sys\nprint('spinning', flush=True)\nwhile True:\n    pass\n"
"""A CPU-bound loop that never yields, until killed; it says so once it spins."""


def pinned(code: str, cpu: int) -> str:
    """``code`` run on one CPU only."""
    return f"import os\nos.sched_setaffinity(0, {{{cpu}}})\n{code}"


@contextmanager
def busy_processes(count: int, code: str = SPIN) -> Iterator[None]:
    """``count`` busy loops, each spinning before this yields, all killed on the way out. Plain
    child processes, not multiprocessing's: its spawn context leaves a resource-tracker process
    for the rest of the session, which the tests that nothing outlives a run would find."""
    started: list[subprocess.Popen[str]] = []
    try:
        for _ in range(count):
            started.append(subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True))
        for process in started:
            assert process.stdout is not None and process.stdout.readline().strip() == "spinning", process.pid
        yield
    finally:
        for process in started:
            process.kill()
            process.wait(timeout=30)
            if process.stdout is not None:
                process.stdout.close()


@pytest.mark.slow
def test_cells_land_on_their_golden_outcomes_beside_cpu_bound_processes(tmp_path: Path) -> None:
    expected = golden.read()
    expected = expected[
        expected.sdk.isin(SDKS)
        & (expected["mode"] == "tool")
        & (expected.variant == "stream")
        & (expected.protocol == "anthropic-messages")
        & (expected.scenario == SCENARIO)
    ]
    assert set(expected.sdk) == set(SDKS), "every chosen cell is in the golden matrix"
    assert "runaway" in set(expected.outcome), "the cell that turned into a timeout under load"
    with busy_processes(BUSY_PER_CORE * (os.cpu_count() or 1)):
        request = SuiteRequest(
            sdks=SDKS, filters=CELLS, options=RunOptions(time_limit_s=TIME_LIMIT_S), results_root=tmp_path
        )
        directory = run_suite(request)
    runs = load_run(directory)["runs"]
    assert golden.differences(runs, expected) == []


class _Computing(Adapter):
    """An in-process SDK's work between model calls: ``STARVED_CPU_S`` of computing on the event loop,
    in slices, then an answer; no model call, so nothing the provider sees is progress."""

    name: ClassVar[str] = "computing"
    distribution: ClassVar[str] = "pytest"
    support: ClassVar[SupportTable] = {(Mode.TOOL, Protocol.CHAT, Variant.DEFAULT): Support.builtin("test")}

    async def run_cell(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        start = time.thread_time()
        while time.thread_time() - start < STARVED_CPU_S:
            sum(range(10_000))
            await asyncio.sleep(0)
        return AdapterResult(output={"computed": True})


STARVED_LIMIT_S = 1.0
STARVED_CPU_S = 0.4
"""Under the limit in CPU; at a fifth of a core (four busy loops on its CPU) over it in wall time."""


@pytest.mark.skipif(
    not Path("/proc/thread-self/schedstat").exists(), reason="the kernel counts no run-queue wait here (schedstat)"
)
def test_a_cell_starved_of_cpu_is_slow_not_stalled(provider: LocalProvider) -> None:
    """The event loop's thread and four busy loops share one CPU: the cell's computing takes
    about twice its stall limit of wall time, and it is still the answer, not a timeout (the
    limit runs on the loop's own time: bench.run.runner._StallClock)."""
    adapter = _Computing()
    [cell] = adapter.cells()
    task = get_task("person")
    cpu = min(os.sched_getaffinity(0))
    mine = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})  # this thread: the event loop's
    try:
        with busy_processes(4, pinned(SPIN, cpu)), provider.open_run(task, Script.parse(["valid"])) as handle:
            started = time.monotonic()
            driven = asyncio.run(drive(adapter, cell, task, handle, STARVED_LIMIT_S))
            took = time.monotonic() - started
    finally:
        os.sched_setaffinity(0, mine)
    assert took > STARVED_LIMIT_S, "the busy loops did not starve the cell: the test shows nothing"
    assert driven.stopped is None and driven.result is not None and driven.result.output == {"computed": True}
