"""``bench merge --force`` and ``bench baseline update`` interrupted in the middle keep the
previous merge or baseline whole, and exit 130 on SIGINT and SIGTERM alike (issue 26, point 7).

``bench merge --force`` deleted the merge it replaced before writing the new one (one SIGINT lost
a good merge), and SIGTERM killed both commands (-15) where every command promises 130. Each test
pauses a real command where the new folder is written whole and the previous one not yet touched
(the ``staged`` test hook), signals it there, and checks what is on disk.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.cli import app
from bench.results.store import KILL_ENV, PAUSE_ENV, read_manifest, read_table

BENCH = [sys.executable, "-m", "bench.cli"]
SMALL = ["--sdk", "agentmaker", "--protocol", "openai-chat", "--scenario", "valid", "--scenario",
         "malformed_then_valid", "--procs", "1", "--no-progress"]  # fmt: skip
SIGNALS = pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])


def bench(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(map(str, args)))
    return result.exit_code, result.stderr


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results root with one complete run, a merge of it, and a baseline made from it."""
    root = tmp_path_factory.mktemp("results")
    code, stderr = bench("run", *SMALL, "--out", root)
    assert code == 0, stderr
    code, stderr = bench("merge", "latest", "--out", root / "merged", "--results", root)
    assert code == 0, stderr
    code, stderr = bench("baseline", "update", "--force", "--results", root)
    assert code == 0, stderr
    return root


def snapshot(directory: Path) -> tuple[dict[str, object], int, int, list[str]]:
    """What must survive: the manifest, both tables' row counts, and nothing staged beside it."""
    beside = sorted(p.name for p in directory.parent.iterdir() if p.name.startswith(f".{directory.name}."))
    runs = read_table(directory, "runs").num_rows
    return read_manifest(directory), runs, read_table(directory, "attempts").num_rows, beside


def wait_for(marker: Path, process: subprocess.Popen[str], timeout_s: float = 120) -> None:
    """Poll for the marker file the paused command writes (observable state, not a sleep)."""
    deadline = time.monotonic() + timeout_s
    while not marker.exists():
        if process.poll() is not None:
            raise AssertionError(f"ended before the pause (exit {process.returncode}): {process.stderr.read()[-2000:]}")
        if time.monotonic() > deadline:
            raise AssertionError("never reached the pause")
        time.sleep(0.05)


def interrupted_at_staged(args: list[str], signum: int, marker: Path) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k != KILL_ENV} | {PAUSE_ENV: f"staged:{marker}"}
    process = subprocess.Popen([*BENCH, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(marker, process)
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return process.returncode, stderr


COMMANDS: dict[str, tuple[Callable[[Path], list[str]], Callable[[Path], Path], str]] = {
    "merge": (
        lambda root: ["merge", "latest", "--out", str(root / "merged"), "--force", "--results", str(root)],
        lambda root: root / "merged",
        "interrupted: nothing merged; {target} is as it was",
    ),
    "baseline": (
        lambda root: ["baseline", "update", "--force", "--results", str(root)],
        lambda root: root / "baseline",
        "interrupted: the baseline {target} is as it was",
    ),
}


@pytest.mark.slow
@SIGNALS
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_interrupted_replacement_keeps_the_previous_folder(
    results: Path, tmp_path: Path, command: str, signum: int
) -> None:
    args, where, message = COMMANDS[command]
    target = where(results)
    before = snapshot(target)
    code, stderr = interrupted_at_staged(args(results), signum, tmp_path / "staged")
    assert code == 130, stderr
    assert "Traceback" not in stderr and message.format(target=target) in stderr, stderr
    assert snapshot(target) == before, "the previous folder, whole, and nothing left beside it"


KILLED = {  # the command, and its write after which the previous folder is aside
    "merge": (["merge", "latest", "--out", "{root}/merged", "--force", "--results", "{root}"], 3),  # runs, attempts
    "baseline": (["baseline", "update", "--force", "--results", "{root}"], 2),  # runs
}
NEXT = {  # the next command, which refuses (exit 2) after putting the previous folder back
    "merge": (["merge", "latest", "--out", "{root}/merged", "--results", "{root}"], "already exists and is not empty"),
    "baseline": (["baseline", "update", "--results", "{root}"], "would not replace the whole baseline"),
}


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(KILLED))
def test_a_replacement_killed_between_its_renames_is_put_back_by_the_next(results: Path, command: str) -> None:
    """SIGKILL with the previous folder moved aside and the new one not yet in place: the next
    command puts the previous one back before deciding anything."""
    target = COMMANDS[command][1](results)
    before = snapshot(target)
    args, step = KILLED[command]
    env = {k: v for k, v in os.environ.items() if k != PAUSE_ENV} | {KILL_ENV: str(step)}
    argv = [a.format(root=results) for a in args]
    killed = subprocess.run([*BENCH, *argv], env=env, capture_output=True, text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert not target.exists() and (results / f".{target.name}.old" / target.name / "manifest.json").is_file()
    next_args, refusal = NEXT[command]
    code, stderr = bench(*(a.format(root=results) for a in next_args))
    assert code == 2 and refusal in stderr, stderr
    assert snapshot(target) == before
