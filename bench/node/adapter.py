"""The base class of a TypeScript SDK's adapter: its cells run in a Node worker.

A subclass declares its cells as any adapter does (a support table with the notes of the SDK
source it rests on) plus :attr:`NodeAdapter.driver` (``adapters/<sdk>/driver.mjs``) and
:attr:`NodeAdapter.npm_package` (whose installed version is the cell's ``sdk_version``).
:meth:`NodeAdapter.run_cell` hands the cell to a worker of the run's pool (one worker per runner
slot, started on the slot's first cell, bench.node.pool) and returns the worker's report as the
in-process adapters' :class:`bench.sdk.adapter.AdapterResult`: the runner classifies it from the
provider's ledger exactly as it does a Python SDK's. Where Node or the locked packages are
missing (:func:`bench.node.setup.unavailable`), every cell is ``unsupported`` with that reason.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

from bench.core.vocabulary import ModeSupport
from bench.node import setup
from bench.node.pool import NodeCommand, NodeWorkerPool
from bench.results.sdklog import CURRENT_CELL
from bench.scenarios.tasks import Task
from bench.sdk import clients
from bench.sdk.adapter import Adapter, AdapterResult, Cell, Endpoint

CHECKOUT = setup.NODE_ROOT.parent


class NodeAdapter(Adapter):
    """An SDK whose cells a Node worker runs (module docstring)."""

    language: ClassVar[str] = "typescript"
    driver: ClassVar[str]
    """The driver module, relative to the checkout: ``adapters/ai/driver.mjs``."""
    npm_package: ClassVar[str]
    """The npm package whose version is the SDK's (``ai``)."""
    stable_route: ClassVar[bool] = True
    """The driver builds the SDK's provider once per base URL, as a user's loop builds it once:
    a slot's cells share one URL (bench.run.runner.Slot), so it is built once per slot."""

    def __init__(self) -> None:
        self._stopped: dict[str | None, str] = {}
        """Per running cell (:data:`bench.results.sdklog.CURRENT_CELL`): the state of a worker
        the cell gave up waiting for (:attr:`bench.releases.pool.Worker.unresponsive`)."""

    @property
    def unresponsive(self) -> str | None:
        """What the runner reads after each cell, as it reads a release worker's
        (``Runner._drive``): the state of this cell's Node worker when the cell stopped waiting
        for it, so a worker that hangs before any model call is a harness error that says so
        (``WorkerStoppedResponding``), not one that blames a proxy. Read once per cell."""
        return self._stopped.pop(CURRENT_CELL.get(), None)

    def unavailable(self) -> str | None:
        """Why this machine cannot run the cells (Node, or the locked packages, missing)."""
        return setup.unavailable()

    def cells(self) -> list[Cell]:
        reason = self.unavailable()
        cells = super().cells()
        if reason is None:
            return cells
        return [
            replace(cell, mode_support=ModeSupport.UNSUPPORTED, note=f"unsupported here: {reason}")
            if cell.mode_support is not ModeSupport.UNSUPPORTED
            else cell
            for cell in cells
        ]

    def installed_version(self) -> str | None:
        return setup.installed_version(self.npm_package)

    def command(self) -> NodeCommand:
        node = shutil.which("node") or "node"
        return NodeCommand(python=Path(node), target=str(CHECKOUT / self.driver))

    async def run_cell(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        """Lease the run's worker for this slot and let it run the cell; outside a run (an
        adapter test calling the adapter directly) a worker is started for the cell and closed
        after it."""
        pool = clients.shared(("node", self.driver), lambda: NodeWorkerPool(self.command(), self.max_concurrency))
        own = pool is None
        if pool is None:
            pool = NodeWorkerPool(self.command(), 1)
        try:
            async with pool.lease() as worker:
                try:
                    return await worker.run(cell, task, endpoint)
                except BaseException:
                    if worker.unresponsive is not None:
                        self._stopped[CURRENT_CELL.get()] = worker.unresponsive
                    raise
        finally:
            if own:
                await pool.close()
