"""``bench report [RUN]``: writes report.md, report.html and report.json into the run folder
(or ``--out``) and prints their paths; ``--json`` / ``--markdown`` print that form to stdout
instead (for ``>> $GITHUB_STEP_SUMMARY``). Exit 2 with one line on a bad run or claims file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bench.report.claims import CLAIMS_FILE

MARKDOWN_FILE, HTML_FILE, JSON_FILE = "report.md", "report.html", "report.json"


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def write_report(directory: Path, out: Path | None = None, claims_path: Path = CLAIMS_FILE) -> dict[str, Path]:
    """Build the report of the run in ``directory`` and write the three forms; returns their paths."""
    from bench.report import render_html, render_markdown
    from bench.report.build import build_from_run
    from bench.report.matrix import is_sweep, scenario_order

    report, runs = build_from_run(directory, claims_path)
    scenarios = scenario_order(runs[~is_sweep(runs)])
    target = out or directory
    target.mkdir(parents=True, exist_ok=True)
    paths = {"markdown": target / MARKDOWN_FILE, "html": target / HTML_FILE, "json": target / JSON_FILE}
    paths["markdown"].write_text(render_markdown.render(report, scenarios), encoding="utf-8")
    paths["html"].write_text(render_html.render(report, scenarios), encoding="utf-8")
    paths["json"].write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return paths


def report_command(
    run: Annotated[str | None, typer.Argument(help="Run folder or suite id (default: the latest run).")] = None,
    results_root: Annotated[Path, typer.Option("--results", help="Results root folder.")] = Path("results"),
    out: Annotated[Path | None, typer.Option(help="Write the reports here instead of the run folder.")] = None,
    claims: Annotated[Path, typer.Option(help="Claims file to check.")] = CLAIMS_FILE,
    as_json: Annotated[bool, typer.Option("--json", help="Print the JSON report to stdout.")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Print the markdown report to stdout.")] = False,
) -> None:
    """Landing matrix, cost of failure, token gap, published claims checked, fault-rate sweeps:
    as markdown (PR comment / job summary), a self-contained HTML page and JSON."""
    from bench.report.claims import ClaimsError
    from bench.results import ResultsError, resolve_run

    if as_json and markdown:
        _fail("give at most one of --json and --markdown")
    try:
        directory = resolve_run(run, results_root)
        paths = write_report(directory, out, claims)
    except (ResultsError, ClaimsError) as error:
        _fail(str(error))
    if as_json or markdown:
        typer.echo(paths["json" if as_json else "markdown"].read_text(encoding="utf-8"), nl=False)
        typer.echo(f"report written to {paths['html'].parent}", err=True)
        return
    for kind, path in paths.items():
        typer.echo(f"{kind}: {path}")
