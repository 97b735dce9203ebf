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

import multiprocessing
import os
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.synchronize import Event
from pathlib import Path

import pytest

from bench.results import golden
from bench.results.store import load_run
from bench.run.plan import Filters
from bench.run.runner import RunOptions
from bench.run.suite import SuiteRequest, run_suite

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


def _spin(running: Event) -> None:
    """A CPU-bound loop that never yields, until killed."""
    running.set()
    while True:
        pass


@contextmanager
def busy_processes(count: int) -> Iterator[None]:
    """``count`` busy loops, each spinning before this yields, all killed on the way out."""
    context = multiprocessing.get_context("spawn")  # no fork of a process with threads
    started = []
    for _ in range(count):
        running = context.Event()
        process = context.Process(target=_spin, args=(running,), daemon=True)
        started.append((process, running))
    try:
        for process, _ in started:
            process.start()
        for process, running in started:
            assert running.wait(timeout=120), f"busy process {process.pid} did not start"
        yield
    finally:
        for process, _ in started:
            if process.pid is not None:
                process.kill()
                process.join(timeout=30)


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
