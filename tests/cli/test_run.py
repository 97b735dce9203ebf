"""What an SDK prints during a run goes to the run's sdk.log, never onto the user's terminal
(issue 13 point 7). pydantic-ai prints a banner with a Logfire advertisement on an agent's first
run when stderr is a terminal (pydantic_ai/_display.py display_agent_banner); so the CLI runs
here under a pseudo-terminal, with none of the variables that silence the banner."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import REPO

QUIET = ("PYTEST_VERSION", "PYTEST_CURRENT_TEST", "CI", "PYDANTIC_AI_NO_BANNER", "NO_COLOR")


@pytest.mark.slow
def test_nothing_an_sdk_prints_reaches_the_terminal(tmp_path: Path) -> None:
    primary, secondary = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in QUIET} | {"COLUMNS": "160"}
    command = [sys.executable, "-m", "bench.cli", "run", "--sdk", "pydantic-ai", "--mode", "tool"]
    command += ["--scenario", "valid", "--no-progress", "--out", str(tmp_path)]
    child = subprocess.Popen(command, stdin=secondary, stdout=secondary, stderr=secondary, env=env, cwd=REPO)
    os.close(secondary)
    screen = b""
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # the terminal's other end closed: the process is done
            break
        if not chunk:
            break
        screen += chunk
    os.close(primary)
    assert child.wait(timeout=600) == 0, screen.decode(errors="replace")
    text = screen.decode(errors="replace")
    assert "cells: ok" in text
    for noise in ("pydantic-ai v", "Logfire", "observability", "PYDANTIC_AI_NO_BANNER"):
        assert noise not in text, f"{noise!r} reached the terminal:\n{text}"
    assert (next(tmp_path.glob("2*")) / "sdk.log").exists()
