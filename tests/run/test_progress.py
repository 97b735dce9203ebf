"""The progress line of `bench run`: outcomes so far, the SDKs finishing cells now, and an ETA
from the cells that ran (a burst of unsupported cells at the start does not make it promise the
run is nearly over). Driven with a fake clock; rendered by rich at 120 columns."""

from __future__ import annotations

import io
from types import SimpleNamespace

from rich.console import Console

from bench.run.progress import RunProgress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def cell(sdk: str, outcome: str) -> SimpleNamespace:
    return SimpleNamespace(run={"sdk": sdk, "outcome": outcome})


def test_eta_outcomes_and_the_sdk_in_progress() -> None:
    clock = Clock()
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120, color_system=None)
    with RunProgress(console, clock=clock) as progress:
        progress.plan(110)
        for _ in range(50):
            progress.record(cell("claude-agent-sdk", "unsupported"))  # recorded at once, take no time
        for i in range(11):
            clock.now += 1.0
            progress.record(cell("pydantic-ai" if i < 8 else "langchain", "recovered" if i % 2 else "wrong"))
        assert progress.done == 61
        # 10 intervals of 1 s for 11 cells that ran: 49 cells left at 1 cell/s.
        assert progress.eta(clock.now) == "ETA 0:49"
        assert progress.running(clock.now) == "langchain, pydantic-ai"
        assert progress.counts() == "[green3]recovered 5[/]  [bold red]WRONG 6[/]"
        progress.progress.refresh()
    text = out.getvalue()
    assert "61/110" in text and "ETA 0:49" in text and "WRONG 6" in text and "langchain, pydantic-ai" in text


def test_no_eta_before_two_cells_ran() -> None:
    clock = Clock()
    progress = RunProgress(Console(file=io.StringIO()), enabled=False, clock=clock)
    progress.plan(10)
    progress.record(cell("pydantic-ai", "ok"))
    assert progress.eta(clock.now) == "ETA -"
    clock.now += 10
    assert progress.running(clock.now) == "running"
