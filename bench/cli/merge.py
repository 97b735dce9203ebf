"""``bench merge``: shards back into one run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bench.cli.common import fail
from bench.cli.exit_codes import ExitCode
from bench.cli.signals import folder_identity
from bench.results.merge import MergeError, merge_runs
from bench.results.store import read_manifest


def merge_command(
    runs: Annotated[list[str], typer.Argument(help="Runs to merge: paths or suite ids (e.g. the shards of one run).")],
    out: Annotated[Path, typer.Option(help="The merged run directory to create.")],
    force: Annotated[
        bool,
        typer.Option(
            help="Merge despite different SDK versions, scenarios, settings or overlapping cells; overwrite --out."
        ),
    ] = False,
    results: Annotated[Path, typer.Option(help="Results root that suite ids are looked up in.")] = Path("results"),
) -> None:
    """Union shard runs (bench run --shard I/N) into one run directory with a manifest.

    Refuses, unless --force: different SDK versions, a scenario defined differently,
    different settings (suite, seed, reps, filters, options), the same cell twice.
    The merge is written beside --out and swapped in whole: a merge it replaces stays until then.
    Exit codes: 0 merged, 2 refused or input error, 130 interrupted (Ctrl-C, SIGTERM).
    """
    before = folder_identity(out)
    try:
        directory, overridden = merge_runs(runs, out, force, results)
    except MergeError as error:
        fail(str(error))
    except KeyboardInterrupt:
        if folder_identity(out) == before:
            typer.echo(f"interrupted: nothing merged; {out} is as it was", err=True)
        else:  # the signal came during the swap, which finishes first
            typer.echo(f"interrupted once the merge was complete: {out} holds it", err=True)
        raise typer.Exit(ExitCode.INTERRUPTED) from None
    for problem in overridden:
        typer.echo(f"warning: merged despite: {problem}", err=True)
    manifest = read_manifest(directory)
    if manifest.get("shards_complete") is False:
        typer.echo("warning: the shards given do not cover 1..N; the merged run is partial", err=True)
    typer.echo(f"{manifest['cells_written']} cells from {len(runs)} run(s): {directory}")
