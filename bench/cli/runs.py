"""``bench runs``: the runs under a results folder, as things a user manages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from bench.run.runs import list_runs


def runs_command(
    results: Annotated[Path, typer.Option(help="Results root folder.")] = Path("results"),
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List the runs: id, date, status, SDKs, cells (written/planned), outcome counts; * marks latest."""
    runs = list_runs(results)
    if as_json:
        typer.echo(json.dumps([run.to_json() for run in runs], indent=2))
        return
    if not runs:
        typer.echo(f"no runs under {results}", err=True)
        return
    rows = [
        [
            ("*" if run.latest else " ") + run.id,
            (run.started_at or "")[:16].replace("T", " "),
            run.status,
            ",".join(sorted(run.sdks)),
            f"{run.cells}/{run.planned}" if run.planned is not None else str(run.cells),
            ", ".join(f"{outcome} {count}" for outcome, count in run.outcomes.items()),
        ]
        for run in runs
    ]
    header = [" id", "date (UTC)", "status", "sdks", "cells", "outcomes"]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(5)]
    for row in [header, *rows]:
        typer.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "  " + row[5])
