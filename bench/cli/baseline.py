"""``bench baseline update``: the committed run ``bench gate`` compares with, replaced on purpose."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bench.cli.common import fail
from bench.cli.exit_codes import ExitCode
from bench.cli.signals import folder_identity
from bench.gate.baseline import BASELINE_DIR, BaselineError, update_baseline
from bench.gate.compare import EmptyRunError, GateInputError, run_gate
from bench.gate.output import render_markdown

baseline_app = typer.Typer(help="The committed baseline bench gate compares with.", no_args_is_help=True)


@baseline_app.command("update")
def baseline_update_command(
    run: Annotated[
        str | None, typer.Argument(help="The run to make the baseline: a path or suite id (default: results/latest).")
    ] = None,
    merge: Annotated[
        bool, typer.Option("--merge", help="Replace only the cells this run has; keep the baseline's others.")
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Replace the whole baseline even with a filtered, partial or narrower run.")
    ] = False,
    results: Annotated[Path, typer.Option(help="Results root: the baseline is written to RESULTS/baseline.")] = Path(
        "results"
    ),
) -> None:
    """Rewrite results/baseline/ (runs.parquet and manifest.json) from a run, on purpose.

    Prints the gate's comparison of the run with the current baseline first: that is what the
    new baseline accepts. Refuses a run that is filtered, a shard, interrupted or partial, or that
    lacks SDKs or cells the baseline has, unless --merge (replace only the cells the run has) or
    --force (replace the whole baseline). The new baseline is written beside the old one and
    swapped in whole: the old one stays until then.
    Exit codes: 0 written, 2 refused, not a run, or a run with harness errors, 130 interrupted
    (Ctrl-C, SIGTERM).
    """
    if merge and force:
        fail("give at most one of --merge and --force")
    target = results / BASELINE_DIR
    before = folder_identity(target)
    try:
        _show_diff(run, results)
        update = update_baseline(run, results, merge=merge, force=force)
    except BaselineError as error:
        fail(str(error))
    except KeyboardInterrupt:
        if folder_identity(target) == before:
            typer.echo(f"interrupted: the baseline {target} is as it was", err=True)
        else:  # the signal came during the swap, which finishes first
            typer.echo(f"interrupted once the new baseline was complete: {target} holds it", err=True)
        raise typer.Exit(ExitCode.INTERRUPTED) from None
    versions = ", ".join(f"{sdk} {version}" for sdk, version in sorted(update.sdk_versions.items()))
    typer.echo(
        f"wrote {update.target}: {update.cells} cells ({versions}) from run {update.suite_id}; "
        f"replaced {update.replaced}, kept {update.kept}, added {update.added} cells"
        + (f"; SDK(s) new to the baseline: {', '.join(update.new_sdks)}" if update.new_sdks else "")
    )


def _show_diff(run: str | None, results: Path) -> None:
    """What the gate says about the run against the baseline it would replace (stdout); nothing
    when there is no baseline yet or either run cannot be read (the update says why)."""
    baseline = results / "baseline"
    if not (baseline / "manifest.json").exists():
        typer.echo(f"no baseline at {baseline} yet: nothing to compare with", err=True)
        return
    try:
        result = run_gate(
            run, str(baseline), results, [], None, None, Path.cwd(), allow_partial=True, allow_option_change=True
        )  # the diff of a baseline taken with other options (more reps) opens with them
    except (GateInputError, EmptyRunError):
        return
    typer.echo(render_markdown(result))
