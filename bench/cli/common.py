"""Helpers every command module shares: the one-line error exit, scenario loading and the range
of a port option."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NoReturn

import typer

from bench.cli.exit_codes import ExitCode
from bench.scenarios.files import SCENARIO_DIR, Scenario, ScenarioError, load_paths


def fail(message: str, code: int = ExitCode.USAGE) -> NoReturn:
    """One clear line on stderr (one per problem when there are several, e.g. every problem in
    every scenario file) and a documented exit code, never a traceback."""
    for line in message.splitlines() or [""]:
        typer.echo(f"error: {line}", err=True)
    raise typer.Exit(int(code))


MAX_PORT = 65_535
"""The highest TCP port: a ``--port`` past it is a usage error (exit 2) when the options are read,
not an ``OverflowError`` from ``bind`` once the command has started."""


def port_option(help: str) -> Any:
    """A ``--port`` option: 0 (a free port) to :data:`MAX_PORT`. Every numeric option of every
    command declares its range, at the option or in the library check it is handed to
    (tests/cli/test_common_numeric_options.py sweeps them all with values out of range)."""
    return typer.Option(min=0, max=MAX_PORT, help=help)


def load_scenarios(paths: list[Path] | None) -> list[Scenario]:
    try:
        return load_paths(paths or [SCENARIO_DIR])
    except ScenarioError as error:
        fail(str(error))


def next_steps(run: Path | str, shown: str) -> list[str]:
    """The commands that show more of ``run``, all but the one (``shown``) that just ran: what a
    summary ends with, so the next step is on the screen."""
    if isinstance(run, Path) and run.is_absolute() and run.is_relative_to(Path.cwd()):
        run = run.relative_to(Path.cwd())
    steps = {
        "report": (f"bench report {run}", "report.md, report.html, report.json: claims, costs, every cell"),
        "view": (f"bench view {run}", "every cell's attempts in a browser"),
        "pick": (f"bench pick {run}", "which SDK and mode to pick, under your weights"),
    }
    shown_steps = [step for name, step in steps.items() if name != shown]
    width = max(len(command) for command, _ in shown_steps)
    return ["next:", *(f"  {command:<{width}}  # {what}" for command, what in shown_steps)]
