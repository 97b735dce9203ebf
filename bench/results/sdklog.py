"""``sdk.log``, the run folder's file of what the SDKs print and log, kept within bounds: an agent
that printed 40 MB a call once left 80 MB for two cells.

Each process of a run writes the file through one :class:`SdkLog`: at most :data:`CELL_LIMIT`
bytes per cell (the cell is :data:`CURRENT_CELL`, set by the runner for the cell's task and so
inherited by every task and ``to_thread`` call the SDK starts) and :data:`RUN_LIMIT` for the file
(its size on disk, so a run's several processes share the bound). Where output is dropped, one
line says so in the log itself. A release or Node worker's stderr comes through here too, read by
the parent as the worker's current cell's (:func:`bench.releases.pool.forward_stderr`).
"""

from __future__ import annotations

import io
import os
from contextvars import ContextVar
from pathlib import Path

CELL_LIMIT = 1 << 20
"""Bytes one cell may add to ``sdk.log`` (1 MiB: pages of tracebacks; the rest is dropped)."""
RUN_LIMIT = 64 << 20
"""Bytes ``sdk.log`` may reach in a run (64 MiB); later output is dropped."""
CURRENT_CELL: ContextVar[str | None] = ContextVar("misfit_bench_cell", default=None)
"""The cell whose task is running (bench.run.runner.Runner.run_cell sets it)."""


class SdkLog(io.TextIOBase):
    """A text stream appending to ``path`` within the cell and run bounds (stdout, stderr and
    the logging handler of a run all write through it)."""

    def __init__(self, path: Path) -> None:
        self._file = path.open("a", encoding="utf-8", buffering=1)
        self._written: dict[str, int] = {}
        self._cut_cells: set[str] = set()
        self._run_cut = False

    def write(self, text: str) -> int:
        size = len(text.encode("utf-8", "replace"))
        if not text or self._run_cut or self._file.closed:
            return len(text)
        cell = CURRENT_CELL.get()
        if cell in self._cut_cells:
            return len(text)
        self._file.flush()
        if os.fstat(self._file.fileno()).st_size + size > RUN_LIMIT:
            self._run_cut = True
            self._file.write(f"\n[misfit-bench: sdk.log cut here: it reached the run's limit of {RUN_LIMIT:,} bytes]\n")
            return len(text)
        if cell is not None:
            if self._written.get(cell, 0) + size > CELL_LIMIT:
                self._cut_cells.add(cell)
                self._file.write(
                    f"\n[misfit-bench: sdk.log cut here for cell {cell}: it wrote more than {CELL_LIMIT:,} bytes]\n"
                )
                return len(text)
            self._written[cell] = self._written.get(cell, 0) + size
        self._file.write(text)
        return len(text)

    def writable(self) -> bool:
        return True

    def flush(self) -> None:
        if not self._file.closed:
            self._file.flush()

    def close(self) -> None:
        self._file.close()
        super().close()
