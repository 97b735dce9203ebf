"""``bench pick [RUN]``: which SDK and output mode to pick, from a finished run: the decision table
(per SDK x mode, per fault family, what the caller gets and what a fault costs, one score under
weights the user states), ranked, with what the ranking cannot see; ``--json`` / ``--markdown``.
``--type module:Type`` (a run on the user's own type) is refused until it is built (exit 2)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from bench.cli.common import fail, next_steps

TYPE_NOT_READY = (
    "--type is not available yet: running the built-in SDKs on your own type is not built; "
    "run your agent with `bench run --agent module:attr`, or pick from a run: bench pick RUN"
)


def pick_command(
    run: Annotated[str | None, typer.Argument(help="Run folder or suite id (default: the latest run).")] = None,
    results_root: Annotated[Path, typer.Option("--results", help="Results root folder.")] = Path("results"),
    weight: Annotated[
        list[str] | None,
        typer.Option(help="Weights over [tool.bench.pick], e.g. wrong=10,empty=10,runaway=5,raised=1,extra_call=0.1"),
    ] = None,
    variants: Annotated[
        str, typer.Option(help="default: the default variants; all: the hardened ones too.")
    ] = "default",
    as_json: Annotated[bool, typer.Option("--json", help="Print the table as JSON.")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Print the table as markdown.")] = False,
    type_: Annotated[str | None, typer.Option("--type", help="module:Type: your own type (not available yet).")] = None,
) -> None:
    """Rank every SDK x output mode of a run by one score under your weights."""
    from bench.pick import PickInputError, pick, render_markdown, render_terminal, resolve_weights
    from bench.report.build import build_from_run
    from bench.report.claims import ClaimsError
    from bench.results.store import ResultsError, resolve_run

    if type_ is not None:
        fail(TYPE_NOT_READY)
    if as_json and markdown:
        fail("give at most one of --json and --markdown")
    if variants not in ("default", "all"):
        fail(f"--variants {variants!r}: expected default or all")
    chosen: Literal["default", "all"] = "all" if variants == "all" else "default"
    try:
        weights = resolve_weights(Path.cwd(), weight or [])
        directory = resolve_run(run, results_root)
        report, _ = build_from_run(directory)
    except (PickInputError, ResultsError, ClaimsError) as error:
        fail(str(error))
    table = pick(report, weights, chosen)
    if as_json:
        typer.echo(table.model_dump_json(indent=2))
    elif markdown:
        typer.echo("\n".join(render_markdown(table)))
    else:
        typer.echo(render_terminal(table))
    typer.echo("", err=as_json or markdown)
    typer.echo("\n".join(next_steps(directory, "pick")), err=as_json or markdown)
