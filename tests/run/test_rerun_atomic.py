"""``bench run --rerun`` killed at each of its writes loses no attempt (issue 26, point 3).

The rerun took the chosen cells out of attempts.parquet, then out of runs.parquet: a kill between
the two left rows whose attempts were gone, ``--resume`` took those cells as done, and the run
said complete with 39 attempts of 196. Both tables are now replaced in one step; this test kills
a real rerun (SIGKILL, nothing of the process runs after it) right after each of its table
writes in turn, resumes it, and compares the run with an uninterrupted rerun of the same run.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.cli import app
from bench.results.store import COMMIT_FILE, KILL_ENV, PARTS_DIR, read_manifest, read_table

BENCH = [sys.executable, "-m", "bench.cli"]
RUN = ["--sdk", "agentmaker", "--protocol", "openai-chat", "--scenario", "valid", "--scenario",
       "malformed_then_valid", "--scenario", "malformed_persistent", "--procs", "1", "--no-progress"]  # fmt: skip
RERUN = ["--outcome", "recovered,raised", "--procs", "1", "--no-progress"]
"""Cells of several model calls each, so each dropped cell takes several attempts with it."""


def bench(*args: str | Path) -> tuple[int, str]:
    """The command in this process (no interpreter to start: the loop below runs it often)."""
    result = CliRunner().invoke(app, list(map(str, args)))
    return result.exit_code, result.stderr


def killed_at(step: int, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """The command in a process of its own that SIGKILLs itself after its ``step``-th write."""
    env = os.environ | {KILL_ENV: str(step)}
    return subprocess.run([*BENCH, *map(str, args)], env=env, capture_output=True, text=True, timeout=900)


def cells(directory: Path) -> dict[str, tuple[str, int]]:
    """Each cell's outcome and attempt count, after checking the two tables agree: every cell
    once, and every attempt from the execution whose row the runs table holds."""
    runs, attempts = read_table(directory, "runs"), read_table(directory, "attempts")
    run_of = dict(zip(runs.column("cell_id").to_pylist(), runs.column("run_id").to_pylist(), strict=True))
    assert len(run_of) == runs.num_rows, "a cell twice in the runs table"
    pairs = list(zip(attempts.column("cell_id").to_pylist(), attempts.column("run_id").to_pylist(), strict=True))
    assert all(run_of.get(cell) == run for cell, run in pairs), "attempts that are not the kept row's"
    counts = Counter(cell for cell, _ in pairs)
    outcomes = runs.column("outcome").to_pylist()
    return {cell: (outcome, counts[cell]) for cell, outcome in zip(run_of, outcomes, strict=True)}


@pytest.fixture(scope="module")
def complete_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("results")
    code, stderr = bench("run", *RUN, "--out", out)
    assert code == 0, stderr
    (directory,) = [p for p in out.iterdir() if p.is_dir()]
    return directory


@pytest.mark.slow
def test_a_rerun_killed_at_each_write_resumes_with_every_attempt(complete_run: Path, tmp_path: Path) -> None:
    reference = tmp_path / "reference"
    shutil.copytree(complete_run, reference)
    code, stderr = bench("run", "--rerun", reference, *RERUN)
    assert code == 0, stderr
    expected = cells(reference)
    assert expected == cells(complete_run), "a rerun of deterministic cells ends as the run was"
    chosen = [cell for cell, (outcome, _) in expected.items() if outcome in ("recovered", "raised")]
    assert chosen and sum(expected[cell][1] for cell in chosen) > len(chosen), "cells of several attempts"

    step = 0
    while True:
        step += 1
        assert step < 100, "the rerun never finished unkilled"
        directory = tmp_path / f"killed-at-{step}"
        shutil.copytree(complete_run, directory)
        killed = killed_at(step, "run", "--rerun", directory, *RERUN)
        if killed.returncode == 0:  # past its last write: nothing left to kill it at
            break
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        code, stderr = bench("run", "--resume", directory, "--procs", "1", "--no-progress")
        assert code == 0, stderr
        assert read_manifest(directory)["status"] == "complete"
        assert cells(directory) == expected, f"killed after write {step}"
        assert sum(n for _, n in cells(directory).values()) == sum(n for _, n in expected.values())
        leftovers = [p.name for p in directory.iterdir() if p.name.endswith(".next") or p.name == COMMIT_FILE]
        assert leftovers == [] and not (directory / PARTS_DIR).exists(), f"killed after write {step}"
    # Both tables staged, the commit, both installed: for the drop, and again for the final merge.
    assert step - 1 >= 10, f"only {step - 1} writes to kill the rerun at"
