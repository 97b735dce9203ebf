"""One signal policy for every command (issue 26, point 7): SIGTERM means what Ctrl-C means.
A command at work exits 130 on either (tests/results/test_store_folder_swap.py: ``bench
merge`` and ``bench baseline update``; tests/test_misuse.py: ``bench run``); the two servers,
whose normal end is a signal, stop on either with 0, never killed by it (-15)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.cli import app

BENCH = [sys.executable, "-m", "bench.cli"]
SERVERS = {
    "serve": (["serve", "--port", "0"], "Ctrl-C to stop"),
    "view": (["view", "--port", "0"], "(Ctrl-C to stop)"),
}


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("server", sorted(SERVERS))
def test_a_server_stops_on_either_signal_with_0(tmp_path: Path, server: str, signum: int) -> None:
    args, ready = SERVERS[server]
    if server == "view":  # something to show
        made = CliRunner().invoke(app, ["run", "--sdk", "agentmaker", "--scenario", "valid", "--out", str(tmp_path)])
        assert made.exit_code == 0, made.stderr
        args = [*args, "--results", str(tmp_path)]
    command = [*BENCH, *args]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        lines = []
        for line in process.stderr:  # until the server says it listens (a read, not a sleep)
            lines.append(line)
            if ready in line:
                break
        assert ready in "".join(lines), "".join(lines)
        process.send_signal(signum)
        assert process.wait(timeout=30) == 0, process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()
