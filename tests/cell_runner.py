"""One way to run an adapter cell in a test: the runner's own path (``bench.run.runner.drive``).

The ``run_cell`` fixture (tests/adapters/conftest.py) is a :class:`CellRunner`:
``await run_cell(cell, script)`` opens a run on the session's provider (tests/conftest.py), builds the
task the way the runner does (a fresh harness tool for a tool task), drives the cell's adapter
under the call cap and a time limit exactly as a ``bench run`` would, and hands back what
happened together with the run's ledger. A test asserts on that, never on a runner of its own.

The cell itself comes from the adapter's own table, through :func:`cell_of` (keywords, so that
no test file has an argument order of its own), and :func:`cell_id` names it in a test id.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from bench.core.vocabulary import Mode, Outcome, Protocol
from bench.provider import LocalProvider, RunHandle
from bench.provider.detect import ToolResultSeen
from bench.provider.ledger import AttemptRecord
from bench.run.classify import Driven
from bench.run.runner import DEFAULT_CALL_CAP, drive
from bench.scenarios.behaviours import Script
from bench.scenarios.files import Scenario, default_scenarios
from bench.scenarios.tasks import Task, get_task
from bench.sdk import registry
from bench.sdk.adapter import Adapter, AdapterResult, Cell
from bench.tools import ToolPlan, UpstreamStep


def cell_of(adapter: Adapter, *, mode: Mode, protocol: Protocol = Protocol.CHAT, variant: str = "default") -> Cell:
    """The one cell of ``adapter``'s own table (:meth:`Adapter.cells`) with this mode, protocol
    and variant, supported or not: a test drives the cell the runner would, never one it built."""
    found = [c for c in adapter.cells() if (c.mode, c.protocol, c.variant) == (mode, protocol, variant)]
    assert len(found) == 1, f"{type(adapter).__name__} has {len(found)} cells {mode}-{protocol}-{variant}"
    return found[0]


def cell_id(cell: Cell) -> str:
    """A cell's name in a parametrized test id: ``mode-protocol-variant``."""
    return f"{cell.mode}-{cell.protocol}-{cell.variant}"


@dataclass
class CellRun:
    """One driven cell: the adapter's report (or why there is none) and the run's ledger."""

    cell: Cell
    task: Task
    handle: RunHandle
    driven: Driven

    @property
    def result(self) -> AdapterResult:
        """What the adapter reported; fails the test when it did not return."""
        driven = self.driven
        if driven.result is None:
            why = f"stopped={driven.stopped}, error={driven.harness_error!r}"
            raise AssertionError(f"{self.cell} did not return: {why}")
        return driven.result

    @property
    def stopped(self) -> Outcome | None:
        """``Outcome.RUNAWAY`` or ``Outcome.TIMEOUT`` when the runner had to stop the call."""
        return self.driven.stopped

    @property
    def harness_error(self) -> BaseException | None:
        return self.driven.harness_error

    @property
    def attempts(self) -> list[AttemptRecord]:
        """Every request the provider served for the cell, auxiliary ones included."""
        return self.handle.attempts

    @property
    def calls(self) -> list[AttemptRecord]:
        """The model calls only (no ``count_tokens`` or other auxiliary requests)."""
        return [attempt for attempt in self.handle.attempts if attempt.attempt is not None]

    @property
    def tool_calls(self) -> int:
        """How many times the SDK called the harness tool."""
        assert self.task.tool is not None
        return len(self.task.tool.invocations)

    def tool_result(self, issued: int, carried_by: int) -> ToolResultSeen | None:
        """The tool result that request ``carried_by`` paired with the call id that reply
        ``issued`` made, or None when no result carried that id."""
        call_id = self.attempts[issued].tool_call_id
        assert call_id is not None, f"reply {issued} issued no tool call"
        return next((seen for seen in self.attempts[carried_by].tool_results if seen.call_id == call_id), None)


class CellRunner:
    """Callable fixture: ``await run_cell(cell, script, then=..., task=..., upstream=...)``."""

    def __init__(self, provider: LocalProvider) -> None:
        self.provider = provider
        self._adapters: dict[str, Adapter] = {}

    def adapter(self, cell: Cell) -> Adapter:
        if cell.sdk not in self._adapters:
            self._adapters[cell.sdk] = registry.load(cell.sdk)
        return self._adapters[cell.sdk]

    async def __call__(
        self,
        cell: Cell,
        script: list[Any],
        then: Any = "repeat",
        *,
        task: str = "person",
        upstream: list[UpstreamStep] | None = None,
        call_cap: int = DEFAULT_CALL_CAP,
        time_limit_s: float | None = None,
        stochastic: dict[str, Any] | None = None,
    ) -> CellRun:
        """``upstream`` is the order service's plan for a tool task (default: always ok);
        ``script``, ``then`` and ``stochastic`` are plain data, as a scenario file holds them."""
        adapter = self.adapter(cell)
        run = get_task(task).with_tool(ToolPlan(upstream=upstream) if upstream is not None else None)
        parsed = Script.parse(script, then=then, stochastic=stochastic)
        return await self._drive(adapter, cell, run, parsed, call_cap, time_limit_s or adapter.time_limit_s)

    async def scenario(
        self, cell: Cell, name: str, *, call_cap: int = DEFAULT_CALL_CAP, time_limit_s: float | None = None
    ) -> CellRun:
        """Run one of the shipped scenarios (scenarios/*.yaml) on ``cell``, as ``bench run`` would:
        the scenario's typed script and the one task object, to the provider and the adapter."""
        scenario = _SCENARIOS[name]
        adapter = self.adapter(cell)
        run = adapter.task_for(scenario).with_tool(scenario.tool)
        limit = time_limit_s or adapter.time_limit_s
        return await self._drive(adapter, cell, run, scenario.build_script(), call_cap, limit)

    async def _drive(
        self, adapter: Adapter, cell: Cell, task: Task, script: Script, call_cap: int, time_limit_s: float
    ) -> CellRun:
        with self.provider.open_run(task, script, call_cap=call_cap) as handle:
            driven = await drive(adapter, cell, task, handle, time_limit_s)
            if driven.result is not None:
                await _settled(handle)
        return CellRun(cell, task, handle, driven)


_SCENARIOS: dict[str, Scenario] = {scenario.name: scenario for scenario in default_scenarios()}


async def _settled(handle: RunHandle) -> None:
    """Wait until every model call the provider counted has its ledger record: the provider
    appends a record after the response is sent, so an SDK can return first."""
    deadline = time.monotonic() + LEDGER_WAIT_S
    while handle.calls_recorded < handle.state.calls_started and time.monotonic() < deadline:
        await asyncio.sleep(0.002)


LEDGER_WAIT_S = 5.0
