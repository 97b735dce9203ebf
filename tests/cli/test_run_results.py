"""The results root has one name, ``--results``, in every command that reads or writes runs
(issue 44.3): ``bench run`` and ``bench upgrade`` take it as ``bench view``, ``runs``, ``pick``
and ``gate`` do, and still take ``--out``, its older spelling."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from bench.cli import app
from bench.results.store import latest_run

ONE_CELL = ["--sdk", "openai-parse", "--mode", "native", "--scenario", "valid", "--procs", "1", "--no-progress"]


@pytest.mark.parametrize("spelling", ["--results", "--out"])
def test_run_writes_under_the_results_root(spelling: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["run", *ONE_CELL, spelling, str(tmp_path / "root")])
    assert result.exit_code == 0, result.output
    written = latest_run(tmp_path / "root")
    assert written is not None and f"results: {written}" in result.stdout


def test_every_command_names_the_results_root_results() -> None:
    group = get_command(app)
    assert hasattr(group, "commands")
    names = {}
    for name in ("run", "upgrade", "view", "runs", "pick", "gate"):
        command = group.commands[name]
        roots = [p for p in command.params if "--results" in getattr(p, "opts", ())]
        if hasattr(command, "commands"):  # bench runs list / ... : each subcommand takes it
            roots = [p for sub in command.commands.values() for p in sub.params if "--results" in p.opts]
        names[name] = bool(roots) and all(p.opts[0] == "--results" for p in roots)
    assert names == dict.fromkeys(names, True)
