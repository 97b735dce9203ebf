"""Helpers every command module shares: the one-line error exit and scenario loading."""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

import typer

from bench.cli.exit_codes import ExitCode
from bench.scenarios.files import SCENARIO_DIR, Scenario, ScenarioError, load_paths


def fail(message: str, code: int = ExitCode.USAGE) -> NoReturn:
    """One clear line on stderr (one per problem when there are several, e.g. every problem in
    every scenario file) and a documented exit code, never a traceback."""
    for line in message.splitlines() or [""]:
        typer.echo(f"error: {line}", err=True)
    raise typer.Exit(int(code))


def load_scenarios(paths: list[Path] | None) -> list[Scenario]:
    try:
        return load_paths(paths or [SCENARIO_DIR])
    except ScenarioError as error:
        fail(str(error))
