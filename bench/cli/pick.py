"""``bench pick [RUN]``: which SDK and output mode to pick, from a finished run: the decision table
(per SDK x mode, per fault family, what the caller gets and what a fault costs, one score under
weights the user states), ranked, with what the ranking cannot see; ``--json`` / ``--markdown``.
``bench pick --type module:Type`` first runs every installed built-in SDK x mode on the user's own
pydantic type (answers derived from it, :mod:`bench.own.typed`), then ranks that run."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from bench.cli.common import fail, next_steps
from bench.cli.exit_codes import ExitCode

if TYPE_CHECKING:
    from bench.pick import Weights

Names = list[str] | None
TYPE_ONLY = ("example", "check", "sdk", "protocol", "scenario", "reps", "progress")
"""The options that shape a ``--type`` run: refused without ``--type`` (a finished run is read as it is)."""


def pick_command(
    ctx: typer.Context,
    run: Annotated[str | None, typer.Argument(help="Run folder or suite id (default: the latest run).")] = None,
    results_root: Annotated[
        Path, typer.Option("--results", help="Results root folder (a --type run is written there).")
    ] = Path("results"),
    weight: Annotated[
        list[str] | None,
        typer.Option(help="Weights over \\[tool.bench.pick], e.g. wrong=10,empty=10,runaway=5,raised=1,extra_call=0.1"),
    ] = None,
    variants: Annotated[
        str, typer.Option(help="default: the default variants; all: the hardened ones too.")
    ] = "default",
    as_json: Annotated[bool, typer.Option("--json", help="Print the table as JSON.")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Print the table as markdown.")] = False,
    type_: Annotated[
        str | None, typer.Option("--type", help="module:Type: run every built-in SDK x mode on your pydantic type.")
    ] = None,
    example: Annotated[
        str | None, typer.Option(help="With --type: a JSON file holding a right answer (default: a derived one).")
    ] = None,
    check: Annotated[
        str | None, typer.Option(help="With --type: module:attr of check(output) -> why it is wrong, or None.")
    ] = None,
    sdk: Annotated[Names, typer.Option("--sdk", help="With --type: only these SDKs (default: all installed).")] = None,
    protocol: Annotated[Names, typer.Option("--protocol", help="With --type: only these protocols.")] = None,
    scenario: Annotated[Names, typer.Option("--scenario", help="With --type: only these scenarios.")] = None,
    reps: Annotated[int, typer.Option(min=1, help="With --type: repetitions per cell.")] = 1,
    progress: Annotated[
        bool | None, typer.Option(help="With --type: progress on stderr (default: a terminal).")
    ] = None,
) -> None:
    """Rank every SDK x output mode of a run by one score under your weights; with --type, first
    run them all on your own pydantic type (answers derived from it, its validators included)."""
    from bench.pick import PickInputError, resolve_weights

    if as_json and markdown:
        fail("give at most one of --json and --markdown")
    if variants not in ("default", "all"):
        fail(f"--variants {variants!r}: expected default or all")
    chosen: Literal["default", "all"] = "all" if variants == "all" else "default"
    try:
        weights = resolve_weights(Path.cwd(), weight or [])
    except PickInputError as error:
        fail(str(error))
    if type_ is None:
        _refuse_type_options(ctx)
        directory = _finished_run(run, results_root)
    else:
        if run is not None:
            fail(f"give a run ({run}) or --type, not both: --type makes a run of its own")
        narrowed = {"--sdk": sdk, "--protocol": protocol, "--scenario": scenario}
        directory = _run_on_type(type_, example, check, narrowed, chosen, reps, results_root, progress)
    _print_pick(directory, weights, chosen, as_json, markdown, shown="pick" if type_ is None else "")
    if type_ is not None and _harness_errors(directory):
        typer.echo("error: harness errors occurred (a bug in misfit-bench, not in an SDK)", err=True)
        raise typer.Exit(ExitCode.HARNESS_ERROR)


def _refuse_type_options(ctx: typer.Context) -> None:
    """A run-shaping option without ``--type`` would be ignored: one line instead."""
    given = [
        f"--{name}"
        for name in TYPE_ONLY
        if getattr(ctx.get_parameter_source(name), "name", None) in ("COMMANDLINE", "ENVIRONMENT")
    ]
    if given:
        fail(f"{', '.join(given)} shape a --type run; a finished run is read as it was made (add --type module:Type)")


def _finished_run(run: str | None, results_root: Path) -> Path:
    from bench.results.store import ResultsError, resolve_run

    try:
        return resolve_run(run, results_root)
    except ResultsError as error:
        fail(str(error))


def _run_on_type(
    reference: str, example: str | None, check: str | None, narrowed: dict[str, Names],
    variants: Literal["default", "all"], reps: int, results_root: Path, progress: bool | None,
) -> Path:  # fmt: skip
    """Every installed built-in SDK x mode (the default variants; with ``all`` the hardened ones
    too) on the user's type, over the default scenarios: the question's run, made as ``bench run``
    makes one (its progress line; an interrupt exits 130 naming ``--resume``)."""
    import sys

    from bench.cli.run import _start
    from bench.pick.question import Question

    question = Question(
        type=reference, example=example, check=check, project=Path.cwd(), sdks=narrowed["--sdk"],
        protocols=narrowed["--protocol"], scenarios=narrowed["--scenario"], variants=variants, reps=reps,
        results=results_root,
    )  # fmt: skip
    show = sys.stderr.isatty() if progress is None else progress
    directory = _start(question.request(), None, None, frozenset(), show)
    given = [f"{flag} {','.join(values)}" for flag, values in narrowed.items() if values]
    if given:  # never narrower than it says
        typer.echo(f"narrowed by {'; '.join(given)}: the ranking covers only these", err=True)
    return directory


def _print_pick(
    directory: Path, weights: Weights, variants: Literal["default", "all"], as_json: bool, markdown: bool, shown: str
) -> None:
    """The table of ``directory``'s run, what it did not measure, and the next steps but ``shown``
    (after a ``--type`` run, ``bench pick RUN`` too: other weights, no new run); on stderr for
    ``--json`` and ``--markdown``, whose stdout is data."""
    from bench.own.typed import unreached_line
    from bench.pick import pick, render_markdown, render_terminal
    from bench.report.build import build_from_run
    from bench.report.claims import ClaimsError
    from bench.results.store import ResultsError, read_manifest
    from bench.run.manifests import not_measured_line

    try:
        report, _ = build_from_run(directory)
        manifest = read_manifest(directory)
    except (ResultsError, ClaimsError) as error:
        fail(str(error))
    table = pick(report, weights, variants)
    typed = manifest.get("output_type")
    aside = as_json or markdown
    if as_json:
        typer.echo(table.model_dump_json(indent=2))
    elif markdown:
        typer.echo("\n".join(render_markdown(table)))
    else:
        typer.echo(render_terminal(table))  # its first line the decision (bench.pick.lead_sentence)
    if typed:
        typer.echo(f"on your type {typed['reference']} (the answers sent: manifest.json, output_type)", err=aside)
    for entry in manifest.get("not_measured") or []:
        typer.echo(not_measured_line(entry), err=aside)
    if typed and (unreached := unreached_line(manifest)) is not None:
        typer.echo(unreached, err=aside)
    typer.echo("", err=aside)
    typer.echo("\n".join(next_steps(directory, shown)), err=aside)


def _harness_errors(directory: Path) -> bool:
    from bench.core.vocabulary import Outcome
    from bench.results.store import read_table

    outcomes = read_table(directory, "runs").column("outcome").to_pylist()
    return str(Outcome.HARNESS_ERROR) in outcomes
