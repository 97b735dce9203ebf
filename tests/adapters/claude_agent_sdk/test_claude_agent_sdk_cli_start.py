"""A Claude CLI that is slow to start is working, not stalled (bench.sdk.progress): the adapter
watches its cell's CLI processes' CPU and notes it as progress, up to a budget of CPU seconds, so
a start slowed by load is measured as the cell it is, and a CLI that spins without ever calling
the provider still stops. Before, a start longer than the stall limit was a ``NoModelCall``."""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("claude_agent_sdk")

from adapters.claude_agent_sdk import adapter as claude
from bench.core.vocabulary import Mode, Protocol
from bench.scenarios.tasks import get_task
from bench.sdk.progress import reporting_to
from tests.cell_runner import CellRunner, cell_of

POLL_S = 0.1
SPIN = "print('started', flush=True)\nwhile True:\n    pass\n"
IDLE = "import time\nprint('started', flush=True)\ntime.sleep(30)\n"
BURN = "import time\nwhile time.process_time() < {seconds}:\n    pass\n"


@contextmanager
def process_of_cell(marker: str, code: str) -> Iterator[subprocess.Popen[bytes]]:
    """A child process carrying the cell's marker, as its CLI does, once it has started (its
    interpreter's start is all done); killed on the way out."""
    env = {**os.environ, "CLAUDE_CONFIG_DIR": marker}
    process = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE)
    try:
        assert process.stdout is not None and process.stdout.readline() == b"started\n"
        yield process
    finally:
        process.kill()
        process.wait()
        if process.stdout is not None:
            process.stdout.close()


async def _notes_within(marker: str, seconds: float, budget_s: float = claude.CLI_WORK_CPU_S) -> tuple[int, bool]:
    """How many notes the watcher made in ``seconds``, and whether it ended by itself. Each note
    dates the work at the reading before it, at most one poll ago."""
    heard: list[float] = []
    with reporting_to(heard.append):
        watcher = asyncio.create_task(claude._watch_cli(marker, budget_s))
    done, _ = await asyncio.wait({watcher}, timeout=seconds)
    watcher.cancel()
    assert all(0 < ago_s < seconds for ago_s in heard), heard
    return len(heard), watcher in done


@pytest.mark.asyncio
async def test_a_working_cli_is_noted_an_idle_one_is_not(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(claude, "CLI_POLL_S", POLL_S)
    with process_of_cell(str(tmp_path / "spinning"), SPIN):
        spinning = await _notes_within(str(tmp_path / "spinning"), 1.0)
    with process_of_cell(str(tmp_path / "idle"), IDLE):
        idle = await _notes_within(str(tmp_path / "idle"), 1.0)
    # The first reading counts the idle process's own start (all its CPU so far), then nothing.
    assert spinning[0] >= 3 and idle[0] <= 1 and not idle[1]


@pytest.mark.asyncio
async def test_the_cpu_counted_as_progress_is_bounded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(claude, "CLI_POLL_S", POLL_S)
    with process_of_cell(str(tmp_path / "spinning"), SPIN):
        notes, ended = await _notes_within(str(tmp_path / "spinning"), 30.0, budget_s=0.3)
    assert ended and notes >= 1  # the stall limit takes over from here


@pytest.mark.slow
@pytest.mark.asyncio
async def test_a_cli_start_longer_than_the_stall_limit_is_measured(
    run_cell: CellRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI's launcher burns four stall limits of CPU before it execs the CLI: the cell is the
    `valid` scenario's ok, not a timeout with no model call."""
    limit_s = 1.0
    found = claude._cli_dying_with_parent

    def slow_launcher(scratch: str) -> str | None:
        launcher = found(scratch)
        assert launcher is not None, "the test needs the guarded launcher (Linux, setpriv)"
        burn = f"{shlex.quote(sys.executable)} -c {shlex.quote(BURN.format(seconds=4 * limit_s))}\n"
        script = Path(launcher).read_text().replace("exec ", f"{burn}exec ", 1)
        Path(launcher).write_text(script)
        return launcher

    monkeypatch.setattr(claude, "CLI_POLL_S", POLL_S)
    monkeypatch.setattr(claude, "_cli_dying_with_parent", slow_launcher)
    cell = cell_of(claude.ClaudeAgentSdkAdapter(), mode=Mode.TOOL, protocol=Protocol.ANTHROPIC)
    ran = await run_cell(cell, ["valid"], time_limit_s=limit_s)
    assert ran.driven.stopped is None and ran.result.exception is None
    assert get_task("person").judge(ran.result.output) == (True, True)
