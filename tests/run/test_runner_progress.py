"""A cell's stall limit hears its adapter too (bench.sdk.progress): work the provider cannot see
(a CLI starting on a loaded machine) keeps a cell alive past the limit; silence does not. The
same notes cross a release worker's pipe (bench.releases.worker, bench.releases.pool)."""

from __future__ import annotations

import asyncio
import io
import json
import time
from typing import Any, ClassVar

import pytest

from bench.core.vocabulary import Mode, Outcome, Protocol, Variant
from bench.provider import LocalProvider
from bench.releases import worker
from bench.releases.pool import Worker
from bench.releases.protocol import encode_request
from bench.run.runner import drive
from bench.scenarios.behaviours import Script
from bench.scenarios.tasks import Task, get_task
from bench.sdk.adapter import Adapter, AdapterResult, Cell, Endpoint, Support, SupportTable
from bench.sdk.progress import note_progress, reporting_to

LIMIT_S = 0.6
WORK_S = 2.0
"""More than three stall limits of work before the first model call."""


class _SlowStart(Adapter):
    """Works ``WORK_S`` before its only call reaches the provider, noting progress or not; a
    task of its own does the noting, as the Claude adapter's CLI watcher does."""

    name: ClassVar[str] = "slow-start"
    distribution: ClassVar[str] = "pytest"
    support: ClassVar[SupportTable] = {(Mode.TOOL, Protocol.CHAT, Variant.DEFAULT): Support.builtin("test")}

    def __init__(self, notes: bool, ago_s: float = 0.0) -> None:
        self.notes = notes
        self.ago_s = ago_s

    async def run_cell(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        async def working() -> None:
            while True:
                await asyncio.sleep(LIMIT_S / 4)
                if self.notes:
                    note_progress(self.ago_s)

        noter = asyncio.create_task(working())
        await asyncio.sleep(WORK_S)
        noter.cancel()
        return AdapterResult(output={"started": "late"})


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("notes", "ago_s", "stopped"),
    [(True, 0.0, None), (False, 0.0, Outcome.TIMEOUT), (True, 2 * LIMIT_S, Outcome.TIMEOUT)],
    ids=["noting", "silent", "work-dated-before-the-limit"],
)
async def test_noted_work_is_not_a_stall_and_silence_is(
    provider: LocalProvider, notes: bool, ago_s: float, stopped: Any
) -> None:
    adapter = _SlowStart(notes, ago_s)
    [cell] = adapter.cells()
    task = get_task("person")
    started = time.monotonic()
    with provider.open_run(task, Script.parse(["valid"], then="repeat"), call_cap=4) as handle:
        driven = await drive(adapter, cell, task, handle, LIMIT_S)
    assert driven.stopped is stopped
    if stopped is None:
        assert driven.result is not None and driven.result.output == {"started": "late"}
    else:
        assert time.monotonic() - started < WORK_S  # stopped at the limit, not at the end of the work


def test_a_release_worker_relays_its_adapters_notes_before_the_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    adapter = _SlowStart(notes=True)
    [cell] = adapter.cells()
    request = encode_request(cell, get_task("person"), Endpoint("http://127.0.0.1:9/runs/never-contacted"))
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(request) + "\n"))
    channel = io.StringIO()
    asyncio.run(worker._cells(adapter, channel))
    *notes, answer = [json.loads(line) for line in channel.getvalue().splitlines()]
    assert len(notes) >= 3 and all(note == {"progress": True, "ago_s": 0.0} for note in notes)
    assert answer["result"]["output"]["data"] == {"started": "late"}


class _Pipe:
    """A worker's stdout: the lines it wrote, read back as the parent reads them."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = [line.encode() + b"\n" for line in lines]

    async def readline(self) -> bytes:
        return self.lines.pop(0) if self.lines else b""


class _Stdin:
    def write(self, data: bytes) -> None:
        pass

    async def drain(self) -> None:
        pass


def test_the_parent_counts_a_workers_notes_as_the_cells_progress() -> None:
    lines = ['{"progress": true, "ago_s": 1.5}'] * 3 + ['{"result": 1}']
    process: Any = type("Process", (), {"stdin": _Stdin(), "stdout": _Pipe(lines)})
    heard: list[float] = []
    with reporting_to(heard.append):
        reply = asyncio.run(Worker(process, "1.0")._exchange({"cell": {}}))
    assert (reply, heard) == ({"result": 1}, [1.5, 1.5, 1.5])
