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

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
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


SPIN = "import sys\nprint('spinning', flush=True)\nwhile True:\n    pass\n"
"""A CPU-bound loop that never yields, until killed; it says so once it spins."""


@contextmanager
def busy_processes(count: int) -> Iterator[None]:
    """``count`` busy loops, each spinning before this yields, all killed on the way out. Plain
    child processes, not multiprocessing's: its spawn context leaves a resource-tracker process
    for the rest of the session, which the tests that nothing outlives a run would find."""
    started: list[subprocess.Popen[str]] = []
    try:
        for _ in range(count):
            started.append(subprocess.Popen([sys.executable, "-c", SPIN], stdout=subprocess.PIPE, text=True))
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
