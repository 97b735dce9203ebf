"""The progress line ``bench run`` shows on stderr: cells done of planned, the SDKs whose cells
are finishing now, the outcomes so far and an ETA.

The ETA counts only cells that ran: unsupported cells are recorded in one burst when the plan
starts and take no time, so a rate that counted them would promise the run ends in seconds.
"""

from __future__ import annotations

import time
from collections import Counter
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from bench.core.vocabulary import CODE, STYLE, Outcome

RECENT_S = 3.0
"""An SDK whose last cell finished this recently is shown as in progress."""
OUTCOME_NAMES: dict[str, str] = {
    Outcome.WRONG: "WRONG", Outcome.EMPTY: "EMPTY", Outcome.RUNAWAY: "runaway", Outcome.HARNESS_ERROR: "HARNESS"
}  # fmt: skip


def eta_text(seconds: float | None) -> str:
    if seconds is None:
        return "ETA -"
    minutes, rest = divmod(round(seconds), 60)
    return f"ETA {minutes}:{rest:02d}"


class RunProgress:
    """A rich progress bar fed by ``run_suite``'s ``on_plan`` and ``on_record`` callbacks."""

    def __init__(self, console: Console, enabled: bool = True, clock: Any = time.monotonic) -> None:
        self.clock = clock
        self.outcomes: Counter[str] = Counter()
        self.total: int | None = None
        self.done = 0
        self.ran = 0
        self.first_ran: float | None = None
        self.last_seen: dict[str, float] = {}
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(bar_width=24),
            MofNCompleteColumn(),
            TextColumn("{task.fields[outcomes]}"),
            TimeElapsedColumn(),
            TextColumn("{task.fields[eta]}"),
            console=console,
            disable=not enabled,
            transient=True,
        )
        self.task = self.progress.add_task("planning", total=None, outcomes="", eta=eta_text(None))

    def __enter__(self) -> RunProgress:
        self.progress.__enter__()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.progress.__exit__(kind, error, trace)

    def plan(self, total: int) -> None:
        self.total = total
        self.progress.update(self.task, total=total, description="running")

    def record(self, cell: Any) -> None:
        """One finished cell (``CellRecord``; its ``run`` row has sdk and outcome)."""
        row = cell.run
        now = self.clock()
        self.done += 1
        self.outcomes[row["outcome"]] += 1
        if row["outcome"] != Outcome.UNSUPPORTED:
            self.ran += 1
            self.first_ran = now if self.first_ran is None else self.first_ran
            self.last_seen[row["sdk"]] = now
        self.progress.update(
            self.task, completed=self.done, description=self.running(now), outcomes=self.counts(), eta=self.eta(now)
        )

    def running(self, now: float) -> str:
        recent = sorted(sdk for sdk, seen in self.last_seen.items() if now - seen <= RECENT_S)
        return ", ".join(recent) if recent else "running"

    def counts(self) -> str:
        """``ok 12  recovered 30  raised 8  WRONG 2``, coloured as in the landing matrix."""
        return "  ".join(
            f"[{STYLE[name]}]{OUTCOME_NAMES.get(name, name)} {self.outcomes[name]}[/]"
            for name in CODE
            if self.outcomes.get(name) and name != Outcome.UNSUPPORTED
        )

    def eta(self, now: float) -> str:
        """Remaining cells at the rate of the cells that ran (the unsupported ones took no time)."""
        if self.total is None or self.first_ran is None or self.ran < 2 or now <= self.first_ran:
            return eta_text(None)
        rate = (self.ran - 1) / (now - self.first_ran)
        return eta_text((self.total - self.done) / rate if rate > 0 else None)
