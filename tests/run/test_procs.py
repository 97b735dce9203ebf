"""``bench run --procs N``: shard processes side by side, one run folder written by the caller,
the same table as one process, and an interrupt that keeps every finished cell."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from bench.results.store import PARTS_DIR, latest_run, load_run, read_manifest, read_table
from bench.run.procs import CELLS_PER_PROCESS, process_count
from bench.run.runner import CellRecord

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


def test_a_shard_drives_the_plans_it_was_sent_and_plans_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shard (a ``--procs`` child, a Ray task) is sent finished plans and drives exactly those:
    with planning made to fail in it, the cells still run; a plan naming an adapter the shard
    does not load fails the shard in one line, never a lost or an invented row."""
    from bench.planner import Filters, SuiteError, SuiteRequest, plan_cells, request_to_json
    from bench.planner import plan as planner
    from bench.run import suite
    from bench.run.suite import run_shard_job

    scenarios = frozenset({"valid", "refusal_persistent"})
    request = SuiteRequest(sdks=("openai-parse",), filters=Filters(scenarios=scenarios))
    _, plans = plan_cells(request, lambda line: None)
    job = {"request": request_to_json(request, ("openai-parse",)), "suite_id": "s", "directory": str(tmp_path / "r")}

    def no_planning(*args: object, **kwargs: object) -> None:
        raise AssertionError("a shard planned the run again")

    monkeypatch.setattr(planner, "plan_cells", no_planning)
    monkeypatch.setattr(suite, "plan_cells", no_planning)
    recorded: list[CellRecord] = []
    run_shard_job({**job, "plans": plans[1:]}, recorded.append, log_dir=tmp_path)
    assert sorted(record.run["cell_id"] for record in recorded) == sorted(plan.cell_id for plan in plans[1:])
    other = replace(plans[0], cell=replace(plans[0].cell, sdk="no-such-sdk"))
    with pytest.raises(SuiteError, match=r"^the plans sent name an adapter this machine does not load: no-such-sdk$"):
        run_shard_job({**job, "plans": (other,)}, recorded.append, log_dir=tmp_path)
    assert len(recorded) == len(plans) - 1
