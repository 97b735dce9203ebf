"""``bench report [RUN]``: writes report.md, report.html and report.json into the run folder
(or ``--out``) and prints their paths; ``--json`` / ``--markdown`` print that form to stdout
instead (for ``>> $GITHUB_STEP_SUMMARY``). Exit 2 with one line on a bad run or claims file, or
a report file that cannot be written; exit 7 when the run or the baseline has no cell."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bench.cli.common import fail, next_steps
from bench.cli.exit_codes import ExitCode
from bench.report.claims import CLAIMS_FILE


def report_command(
    run: Annotated[str | None, typer.Argument(help="Run folder or suite id (default: the latest run).")] = None,
    results_root: Annotated[Path, typer.Option("--results", help="Results root folder.")] = Path("results"),
    out: Annotated[Path | None, typer.Option(help="Write the reports here instead of the run folder.")] = None,
    claims: Annotated[Path, typer.Option(help="Claims file to check.")] = CLAIMS_FILE,
    as_json: Annotated[bool, typer.Option("--json", help="Print the JSON report to stdout.")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Print the markdown report to stdout.")] = False,
    baseline: Annotated[
        str | None, typer.Option(help="Add bench gate's changes against this run (path or suite id) to report.md.")
    ] = None,
    html_url: Annotated[
        str, typer.Option(help="Where report.md's details links point (a hosted report.html).")
    ] = "report.html",
) -> None:
    """Which SDK and mode to pick (weights from \\[tool.bench.pick]), the claims in their words, then
    the landing matrix, cost of failure, token gap, claims' checks, fault-rate sweeps: as markdown
    (PR comment / job summary), a self-contained HTML page and JSON."""
    from bench.gate.compare import EmptyRunError, GateInputError
    from bench.pick import PickInputError, lead, resolve_weights
    from bench.report.claims import ClaimsError
    from bench.report.files import write_report
    from bench.results.store import ResultsError, resolve_run

    if as_json and markdown:
        fail("give at most one of --json and --markdown")
    try:
        directory = resolve_run(run, results_root)
        base = resolve_run(baseline, results_root) if baseline is not None else None
        weights = resolve_weights(Path.cwd(), [])  # [tool.bench.pick]: the pick the reports open with
        paths = write_report(directory, out, claims, base, html_url, lead(weights))
    except (ResultsError, ClaimsError, GateInputError, PickInputError) as error:
        fail(str(error))
    except EmptyRunError as error:  # --baseline (or the run) has no cell: bench gate's exit 7
        fail(str(error), ExitCode.EMPTY_RUN)
    except OSError as error:  # the reports' folder or files (--out)
        fail(f"{error.filename or out or directory}: cannot write the report: {error.strerror or error}")
    if as_json or markdown:
        typer.echo(paths["json" if as_json else "markdown"].read_text(encoding="utf-8"), nl=False)
        typer.echo(f"report written to {paths['html'].parent}", err=True)
        return
    for kind, path in paths.items():
        typer.echo(f"{kind}: {path}")
    typer.echo("\n".join(next_steps(directory, "report")))
