"""``sdk.log`` is bounded per cell and per run, and says where it was cut (issue 26, point 8):
an agent printing 40 MB a call once left 80 MB for two cells. Driven through the run's own
capture (stdout, stderr and the logging handler of :func:`bench.run.capture._capture_sdk_logs`)."""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path

import pytest

from bench.results import sdklog
from bench.run.capture import _capture_sdk_logs, _release_sdk_logs


def run_cells(directory: Path, cells: dict[str, int]) -> str:
    """Each cell, in its own task as the runner runs it, prints and logs ``bytes`` of output."""

    async def cell(cell_id: str, size: int) -> None:
        sdklog.CURRENT_CELL.set(cell_id)
        for _ in range(size // 100_000):
            print("p" * 49_999)  # an agent's print: sys.stdout is the log
            logging.getLogger("some.sdk").error("l" * 49_960)  # and its logger

    async def main() -> None:
        await asyncio.gather(*(cell(cell_id, size) for cell_id, size in cells.items()))

    handler = _capture_sdk_logs(directory)
    try:
        asyncio.run(main())
        print("after the cells")  # no cell: bounded by the run's limit only
    finally:
        _release_sdk_logs(handler, completed=True)
    return (directory / "sdk.log").read_text(encoding="utf-8")


def test_a_cell_that_prints_too_much_is_cut_and_the_log_says_where(tmp_path: Path) -> None:
    text = run_cells(tmp_path, {"loud": 40_000_000, "quiet": 200_000})
    assert len(text.encode()) < 2 * sdklog.CELL_LIMIT + 10_000
    assert (
        text.count(f"[misfit-bench: sdk.log cut here for cell loud: it wrote more than {sdklog.CELL_LIMIT:,} bytes]")
        == 1
    )
    assert "cell quiet" not in text and text.count("p" * 49_999) >= 10 + 2  # the quiet cell is whole
    assert text.endswith("after the cells\n")


def test_the_run_log_stops_at_its_limit_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sdklog, "RUN_LIMIT", 3 * sdklog.CELL_LIMIT)
    text = run_cells(tmp_path, {f"cell-{i}": sdklog.CELL_LIMIT - 200_000 for i in range(6)})
    assert len(text.encode()) <= 3 * sdklog.CELL_LIMIT + 200
    assert (
        text.count(f"[misfit-bench: sdk.log cut here: it reached the run's limit of {3 * sdklog.CELL_LIMIT:,} bytes]")
        == 1
    )
    assert "after the cells" not in text
    assert sys.stdout is sys.__stdout__ or "sdk.log" not in str(sys.stdout)
