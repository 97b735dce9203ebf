"""``bench run --procs N``: shard processes side by side, one run folder written by the caller,
the same table as one process, and an interrupt that keeps every finished cell."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from bench.results.store import PARTS_DIR, latest_run, load_run, read_manifest, read_table
from bench.run.procs import CELLS_PER_PROCESS, process_count

BENCH = [sys.executable, "-m", "bench.cli", "run", "--sdk", "openai-parse", "--no-progress"]
KEY = ["outcome", "model_calls", "exception_type", "output_retries", "transport_retries"]


def _table(directory: Path) -> pd.DataFrame:
    return load_run(directory)["runs"].set_index("cell_id")[KEY].sort_index()


def _run(out: Path, *args: str) -> Path:
    done = subprocess.run([*BENCH, "--out", str(out), *args], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return latest_run(out)


def test_process_count_defaults_to_the_cores_and_never_exceeds_the_cells(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert process_count(None, 10 * CELLS_PER_PROCESS) == 2
    assert process_count(None, CELLS_PER_PROCESS) == 1  # a small run is not worth a second interpreter
    assert process_count(4, 3) == 3 and process_count(3, 1000) == 3 and process_count(None, 0) == 1


@pytest.mark.slow
def test_two_processes_write_the_table_one_process_writes(tmp_path: Path) -> None:
    one = _run(tmp_path / "one", "--procs", "1", "--scenario", "*_then_valid")
    two = _run(tmp_path / "two", "--procs", "2", "--scenario", "*_then_valid")
    assert read_manifest(one)["procs"] == 1 and read_manifest(two)["procs"] == 2
    assert read_manifest(two)["status"] == "complete" and not (two / PARTS_DIR).exists()
    pd.testing.assert_frame_equal(_table(one), _table(two))
    assert load_run(two)["runs"].suite_id.nunique() == 1


@pytest.mark.slow
def test_an_interrupt_stops_every_process_and_resume_finishes_the_run(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [*BENCH, "--out", str(tmp_path), "--procs", "2", "--reps", "4"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 180
    while not any(tmp_path.glob(f"*/{PARTS_DIR}/runs-*.parquet")):  # observable state, not a sleep
        assert time.monotonic() < deadline and process.poll() is None, "no part was written"
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130 and "Traceback" not in stderr, stderr
    directory = latest_run(tmp_path)
    manifest = read_manifest(directory)
    assert manifest["status"] == "interrupted"
    assert 0 < read_table(directory, "runs").num_rows < manifest["cells_planned"]
    resumed = subprocess.run(
        [sys.executable, "-m", "bench.cli", "run", "--resume", str(directory), "--no-progress"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    run = load_run(directory)
    assert run["runs"].cell_id.is_unique and len(run["runs"]) == run["manifest"]["cells_planned"]


def test_a_child_killed_mid_frame_loses_only_the_cell_it_was_sending() -> None:
    import io
    import queue

    from bench.run.procs import _forward, send
    from bench.run.runner import CellRecord

    stream = io.BytesIO()
    send(stream, CellRecord({"cell_id": "a"}))
    send(stream, CellRecord({"cell_id": "b"}))
    cut = io.BytesIO(stream.getvalue()[:-3])  # the second frame is cut short, no "done" frame
    inbox: queue.Queue = queue.Queue()
    _forward(cut, 0, inbox)
    items = [inbox.get_nowait() for _ in range(inbox.qsize())]
    assert [item.run["cell_id"] for _, item in items[:-1]] == ["a"] and items[-1] == (0, -1)


def test_a_cell_a_shard_was_sent_and_cannot_plan_fails_the_shard(tmp_path: Path) -> None:
    """A shard plans the run's request again and keeps the cells it was sent: one missing from
    its plan (planning that is not deterministic) fails the shard, naming it, never a lost row."""
    from bench.planner import Filters, SuiteRequest, request_to_json
    from bench.run.procs import ShardPlanError
    from bench.run.suite import run_shard_job

    request = SuiteRequest(sdks=("openai-parse",), filters=Filters(scenarios=frozenset({"valid"})))
    job = {"request": request_to_json(request, ("openai-parse",)), "suite_id": "s", "directory": str(tmp_path / "r")}
    recorded: list[object] = []
    run_shard_job({**job, "cells": []}, recorded.append, log_dir=tmp_path)
    with pytest.raises(ShardPlanError, match=r"^1 of the 1 cells sent to this shard are not in its own plan .*"
                                             r"\(first: cell 0123456789abcdef\): a bug in misfit-bench$"):  # fmt: skip
        run_shard_job({**job, "cells": ["0123456789abcdef"]}, recorded.append, log_dir=tmp_path)
    assert recorded == []
