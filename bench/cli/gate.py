"""``bench gate``: compare a run with a baseline and exit with the verdict's code."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from bench.cli.common import fail
from bench.cli.exit_codes import ExitCode
from bench.gate.compare import (
    EmptyRunError,
    GateInputError,
    Verdict,
    load_config,
    load_side,
    resolve_alpha,
    resolve_thresholds,
    run_gate,
)
from bench.gate.output import (
    append_step_summary,
    json_text,
    render_markdown,
    to_json,
    workflow_annotations,
    write_junit,
)
from bench.gate.plan import load_plan, plan_json, render_plan

VERDICT_EXIT = {
    Verdict.PASS: ExitCode.OK,
    Verdict.FAIL: ExitCode.GATE_FAILED,
    Verdict.HARNESS_ERROR: ExitCode.HARNESS_ERROR,
    Verdict.NOTHING_TO_COMPARE: ExitCode.NOTHING_TO_COMPARE,
    Verdict.PARTIAL: ExitCode.PARTIAL_RUN,
    Verdict.INCONCLUSIVE: ExitCode.INCONCLUSIVE,
}


def gate_command(
    current: Annotated[
        str | None, typer.Argument(help="The run to judge: a path or a suite id (default: results/latest).")
    ] = None,
    baseline: Annotated[str, typer.Option(help="The run to compare with: a path or a suite id.")] = "baseline",
    threshold: Annotated[
        list[str] | None,
        typer.Option(
            "--threshold",
            "-t",
            help="METRIC:+AMOUNT (pp, % or plain), repeatable: user_failure:+2pp, billed_tokens:+10%, model_calls:+1",
        ),
    ] = None,
    alpha: Annotated[
        float | None, typer.Option(help="Family-wise error rate for stochastic cells (default 0.05).")
    ] = None,
    junit: Annotated[Path | None, typer.Option(help="Write JUnit XML here: one testcase per gated cell.")] = None,
    annotate: Annotated[
        bool | None,
        typer.Option(
            "--annotations/--no-annotations",
            help="::error lines on stderr for the 10 worst regressions (default: when GITHUB_ACTIONS is set).",
        ),
    ] = None,
    fail_on_missing: Annotated[
        bool | None,
        typer.Option(
            "--fail-on-missing/--allow-missing", help="Exit 1 when a baseline cell is missing from the current run."
        ),
    ] = None,
    allow_partial: Annotated[
        bool,
        typer.Option(
            "--allow-partial", help="Gate an interrupted or partial run on the cells it has instead of exit 6."
        ),
    ] = False,
    allow_option_change: Annotated[
        bool,
        typer.Option(
            "--allow-option-change",
            help="Compare runs made with different --call-cap, --time-limit, --reps, --seed, --tasks or "
            "--cassettes instead of exit 2 (the report says so first).",
        ),
    ] = False,
    plan: Annotated[
        bool,
        typer.Option(
            "--plan", help="Print how many reps each stochastic cell of the baseline needs instead of comparing."
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON instead of markdown.")] = False,
    results: Annotated[Path, typer.Option(help="Results root that suite ids are looked up in.")] = Path("results"),
) -> None:
    """Compare a run with a baseline cell by cell; fail when failure handling got worse.

    Cell: sdk, mode, variant, protocol, stream, scenario (aggregated over reps).
    Metrics: user_failure (wrong + empty), raised, timeout and runaway rates;
    model_calls (mean model calls per rep, the runs table's column);
    billed_tokens (mean extra over the no-fault control).
    Defaults: user_failure:+0pp raised:+0pp timeout:+0pp runaway:+0pp model_calls:+0.5 billed_tokens:+0
    (the measured token noise: docs/ci.md).
    Override: the tool.bench.gate table of ./pyproject.toml (thresholds, alpha, fail_on_missing), then -t.

    Only the cells the current run planned are compared (its SDKs, filters, scenarios, shard);
    baseline cells outside that plan are counted in one line.
    Scripted cells are compared exactly: one newly wrong, empty, runaway or timed out is a regression
    whatever the thresholds (a timeout: inconclusive, see below).
    Runs made with different cell-deciding options (--call-cap, --time-limit, --reps, --seed,
    --tasks, --cassettes) are refused (exit 2) naming them, unless --allow-option-change.
    Stochastic cells: one-sided exact tests (paired McNemar, else Fisher), Holm-corrected;
    a regression is beyond its threshold and significant; a failure rate whose test had under 80%
    power to see a rise of its threshold (at least 10pp) makes the cell inconclusive.
    A cell that timed out more often than in the baseline is inconclusive, not a regression
    ("timed out: may be machine load; re-run it"), unless another failure rate rose too.
    Markdown to stdout, appended to $GITHUB_STEP_SUMMARY when set. Details: docs/ci.md.

    Exit codes:
    0 pass;
    1 regression (or a missing cell with --fail-on-missing);
    2 usage or input error (bad threshold, a path that is not a run, runs made with other options);
    3 harness error in the current run;
    4 nothing to compare (no cell in both runs);
    5 inconclusive (a stochastic cell's reps too few to see a rise of the effect size, see --plan;
      or a cell timed out where the baseline did not: re-run it);
    6 partial run (interrupted, or shards missing) without --allow-partial;
    7 empty run (no cell written, current or baseline).
    """
    if plan:
        _print_plan(baseline, results, threshold or [], alpha, as_json)
        return
    try:
        result = run_gate(
            current, baseline, results, threshold or [], alpha, fail_on_missing, Path.cwd(), allow_partial,
            allow_option_change,
        )  # fmt: skip
    except GateInputError as error:
        fail(str(error))
    except EmptyRunError as error:
        fail(str(error), ExitCode.EMPTY_RUN)
    code = VERDICT_EXIT[result.verdict]
    markdown = render_markdown(result)
    if as_json:
        typer.echo(json_text(to_json(result, int(code))) + "\n", nl=False)
    else:
        typer.echo(markdown, nl=False)
    try:
        if summary := os.environ.get("GITHUB_STEP_SUMMARY"):
            append_step_summary(markdown, Path(summary))
        if junit is not None:
            write_junit(result, junit)
    except OSError as error:
        fail(f"{error.filename or junit}: cannot write: {error.strerror or error}")
    if annotate if annotate is not None else os.environ.get("GITHUB_ACTIONS") == "true":
        for line in workflow_annotations(result):
            typer.echo(line, err=True)
    typer.echo(f"gate: {result.verdict} ({len(result.regressions)} regressed, {len(result.cells)} compared)", err=True)
    raise typer.Exit(int(code))


def _print_plan(baseline: str, results: Path, overrides: list[str], alpha: float | None, as_json: bool) -> None:
    """``--plan``: the reps each stochastic cell needs for the configured thresholds, alpha and power."""
    try:
        config = load_config(Path.cwd())
        thresholds = resolve_thresholds(config, overrides)
        level = resolve_alpha(config, alpha)
        side = load_side("baseline", baseline, results)
        result = load_plan(side, config, thresholds, level)
    except GateInputError as error:
        fail(str(error))
    except EmptyRunError as error:
        fail(str(error), ExitCode.EMPTY_RUN)
    if as_json:
        typer.echo(json_text(plan_json(result)))
    else:
        typer.echo(render_plan(result), nl=False)
