"""``Adapter.run``, the one entry to a cell (issue 29, part 3): a cell marked unsupported is refused
there for every adapter, before its ``run_cell`` is reached, on every path a cell takes (the
runner's ``drive``, which the adapter tests use too, and a release worker)."""

from __future__ import annotations

import asyncio
import io
import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import pytest

from bench.core.vocabulary import Mode, ModeSupport, Protocol, Variant
from bench.provider import LocalProvider
from bench.releases import worker
from bench.releases.protocol import encode_request
from bench.run.runner import drive
from bench.scenarios.behaviours import Script
from bench.scenarios.tasks import Task, get_task
from bench.sdk import registry
from bench.sdk.adapter import Adapter, AdapterResult, Cell, Endpoint, Support, SupportTable, UnsupportedCell

ROOT = Path(__file__).resolve().parents[2]
NOWHERE = Endpoint("http://127.0.0.1:9/runs/never-contacted")
"""Never reached: the recorded ``run_cell`` below replaces the SDK call."""


def _installed() -> list[str]:
    names = []
    for name in registry.registrations():
        try:
            registry.load(name)
        except registry.AdapterUnavailable:
            continue
        names.append(name)
    return names


class _Recorder:
    """Stands in for an adapter's ``run_cell``: records the calls that reach it."""

    def __init__(self) -> None:
        self.calls: list[Cell] = []

    async def __call__(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        self.calls.append(cell)
        return AdapterResult(output="ran")


@pytest.mark.parametrize("name", _installed())
def test_a_cell_marked_unsupported_is_refused_for_every_adapter(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    adapter = registry.load(name)
    recorder = _Recorder()
    monkeypatch.setattr(adapter, "run_cell", recorder)
    task = get_task("person")
    cells = adapter.cells()
    unsupported = [c for c in cells if c.mode_support is ModeSupport.UNSUPPORTED]
    supported = next(c for c in cells if c.mode_support is not ModeSupport.UNSUPPORTED)
    # The table's own gaps, and a supported cell marked unsupported (pydantic-ai has no gap).
    for cell in [*unsupported, replace(supported, mode_support=ModeSupport.UNSUPPORTED)]:
        with pytest.raises(
            UnsupportedCell, match=f"^{re.escape(cell.key)}: cell .* is unsupported and must not be run"
        ):
            asyncio.run(adapter.run(cell, task, NOWHERE))
    assert recorder.calls == []
    result = asyncio.run(adapter.run(supported, task, NOWHERE))
    assert (result.output, recorder.calls) == ("ran", [supported])


async def test_the_runner_path_records_the_refusal_as_a_harness_error_before_any_call(provider: LocalProvider) -> None:
    adapter = registry.load("claude-agent-sdk")  # no guard of its own: it would spawn the CLI
    [cell] = [c for c in adapter.cells() if (c.mode, c.protocol) == (Mode.NATIVE, Protocol.ANTHROPIC)]
    assert cell.mode_support is ModeSupport.UNSUPPORTED
    task = get_task("person")
    with provider.open_run(task, Script.parse(["valid"], then="repeat"), call_cap=4) as handle:
        driven = await drive(adapter, cell, task, handle, 30.0)
        assert handle.attempts == []
    assert isinstance(driven.harness_error, UnsupportedCell)


class _Unsupported(Adapter):
    name: ClassVar[str] = "stub"
    distribution: ClassVar[str] = "pytest"
    support: ClassVar[SupportTable] = {(Mode.TOOL, Protocol.CHAT, Variant.DEFAULT): Support.unsupported("none")}

    async def run_cell(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        raise AssertionError("run_cell reached with an unsupported cell")


def test_a_release_worker_refuses_it_too(monkeypatch: pytest.MonkeyPatch) -> None:
    adapter = _Unsupported()
    [cell] = adapter.cells()
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(encode_request(cell, get_task("person"), NOWHERE)) + "\n"))
    channel = io.StringIO()
    asyncio.run(worker._cells(adapter, channel))
    [reply] = [json.loads(line) for line in channel.getvalue().splitlines()]
    assert reply["harness"]["type"] == "bench.sdk.adapter.UnsupportedCell"


def test_no_caller_reaches_run_cell_but_adapter_run() -> None:
    """Every path to an adapter goes through ``Adapter.run``; ``self.run_cell`` is the base class's
    own call (and the runner's own method of that name, which takes a plan); an override's
    ``super().run_cell`` is the same path (bench/own/typed.py)."""
    sources = [*(ROOT / "bench").rglob("*.py"), ROOT / "tests" / "cell_runner.py"]
    calls: list[Any] = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sources
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"(?<!self)(?<!super\(\))\.run_cell\(", line)
    ]
    assert calls == []
